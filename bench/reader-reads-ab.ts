/**
 * @module Benchmark: what the reads of manifests and segments cost a reopen
 * and an idle refresh, for an A/B of two trees in separate processes: the
 * CPU of `EngineReader.open` (segments read whole), of `Engine.open` with
 * paged values (segments read by their tails), and of an idle
 * `EngineReader.refresh`, with the store requests each makes.
 *
 * Fills a MemoryStore with KEYS keys (VALUE_BYTES each) in one full
 * checkpoint, then ROUNDS rounds of each open and REFRESHES idle refreshes.
 * RUNTIME names the runtime folder to load (default: this tree's), so that
 * one command runs the same code against another tree:
 *
 *   npx tsx bench/reader-reads-ab.ts
 *   RUNTIME=<other tree>/runtime npx tsx bench/reader-reads-ab.ts
 *
 * Env: KEYS (200000), VALUE_BYTES (100), ROUNDS (8), REFRESHES (2000).
 */
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const env = (name: string, dflt: number) => (process.env[name] === undefined ? dflt : Number(process.env[name]));
const KEYS = env("KEYS", 200_000);
const VALUE_BYTES = env("VALUE_BYTES", 100);
const ROUNDS = env("ROUNDS", 8);
const REFRESHES = env("REFRESHES", 2000);
const RUNTIME = process.env.RUNTIME ?? resolve(import.meta.dirname, "../runtime");

type Runtime = typeof import("../runtime/index.js");
const rt = (await import(pathToFileURL(resolve(RUNTIME, "index.ts")).href)) as Runtime;
const { Engine, EngineReader, MemoryStore, WriteBatch, withCounting } = rt;

const cpuMs = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const inner = new MemoryStore();
{
  const engine = await Engine.open(inner, { checkpointWalObjects: 0 });
  const value = new Uint8Array(VALUE_BYTES).fill(3);
  for (let i = 0; i < KEYS; i += 1000) {
    const b = new WriteBatch();
    for (let j = i; j < Math.min(KEYS, i + 1000); j++) b.put(`job/${String(j).padStart(8, "0")}`, value);
    await engine.commit(b);
  }
  await engine.checkpoint();
  await engine.close();
}
const store = withCounting(inner);
const readerCpu: number[] = [];
const writerCpu: number[] = [];
let readerRequests = "";
let writerRequests = "";
for (let r = 0; r < ROUNDS; r++) {
  store.reset();
  let t = process.cpuUsage();
  const reader = await EngineReader.open(store);
  readerCpu.push(cpuMs(t));
  readerRequests = `${store.counts.gets} gets, ${store.counts.lists} lists`;
  await reader.close();
  store.reset();
  t = process.cpuUsage();
  const writer = await Engine.open(store, { checkpointWalObjects: 0, pageValues: { keyPrefixes: ["job/"], minBytes: 16 } });
  writerCpu.push(cpuMs(t));
  writerRequests = `${store.counts.gets} gets, ${store.counts.lists} lists`;
  await writer.close();
}
const reader = await EngineReader.open(store);
store.reset();
const t = process.cpuUsage();
for (let i = 0; i < REFRESHES; i++) await reader.refresh();
const refreshUs = (cpuMs(t) * 1000) / REFRESHES;
const perRefresh = `${store.counts.gets / REFRESHES} gets, ${store.counts.lists / REFRESHES} lists`;
await reader.close();
console.log(
  `reader-reads-ab ${RUNTIME}: KEYS=${KEYS} VALUE_BYTES=${VALUE_BYTES} ROUNDS=${ROUNDS} REFRESHES=${REFRESHES}, node ${process.version}, load ${loadavg()[0]!.toFixed(1)}`,
);
console.log(`  EngineReader.open CPU p50 ${median(readerCpu).toFixed(1)} ms (${readerRequests})`);
console.log(`  Engine.open, paged, CPU p50 ${median(writerCpu).toFixed(1)} ms (${writerRequests})`);
console.log(`  idle refresh CPU ${refreshUs.toFixed(1)} µs (${perRefresh})`);
