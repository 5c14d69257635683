/**
 * @module Benchmark: what checking each segment against the checksum its
 * manifest records (and each block against the one its index gives) costs,
 * for an A/B of two trees in separate processes: the CPU of
 * `EngineReader.open` (segments read whole), of `Engine.open` with paged
 * values (segments read by their tails), and of cold block reads (a fresh
 * paged engine per round, then one `warm` per block, each a ranged read of
 * a block not cached, checked and decoded).
 *
 * Fills a MemoryStore with KEYS keys (VALUE_BYTES each) in one full
 * checkpoint. RUNTIME names the runtime folder to load (default: this
 * tree's), so that one command runs the same code against another tree:
 *
 *   npx tsx bench/segment-sum-ab.ts
 *   RUNTIME=<other tree>/runtime npx tsx bench/segment-sum-ab.ts
 *
 * Env: KEYS (200000), VALUE_BYTES (100), ROUNDS (8), COLD (400 blocks read per round).
 */
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const env = (name: string, dflt: number) => (process.env[name] === undefined ? dflt : Number(process.env[name]));
const KEYS = env("KEYS", 200_000);
const VALUE_BYTES = env("VALUE_BYTES", 100);
const ROUNDS = env("ROUNDS", 8);
const COLD = env("COLD", 400);
const RUNTIME = process.env.RUNTIME ?? resolve(import.meta.dirname, "../runtime");

type Runtime = typeof import("../runtime/index.js");
const rt = (await import(pathToFileURL(resolve(RUNTIME, "index.ts")).href)) as Runtime;
const { Engine, EngineReader, MemoryStore, WriteBatch, withCounting } = rt;

const cpuMs = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const key = (i: number) => `job/${String(i).padStart(8, "0")}`;
const PAGED = { checkpointWalObjects: 0, pageValues: { keyPrefixes: ["job/"], minBytes: 16 } };

const inner = new MemoryStore();
{
  const engine = await Engine.open(inner, { checkpointWalObjects: 0 });
  const value = new Uint8Array(VALUE_BYTES).fill(3);
  for (let i = 0; i < KEYS; i += 1000) {
    const b = new WriteBatch();
    for (let j = i; j < Math.min(KEYS, i + 1000); j++) b.put(key(j), value);
    await engine.commit(b);
  }
  await engine.checkpoint();
  await engine.close();
}
// One key per block of 64 KiB, spread over the store: every warm of a fresh engine reads a block of its own.
const perBlock = Math.max(1, Math.ceil((64 * 1024) / (VALUE_BYTES + 16)));
const coldKeys = Array.from({ length: Math.min(COLD, Math.floor(KEYS / perBlock)) }, (_, i) => key(i * perBlock + (perBlock >> 1)));
const store = withCounting(inner);
const readerCpu: number[] = [];
const writerCpu: number[] = [];
const coldUs: number[] = [];
let coldRequests = "";
for (let r = 0; r < ROUNDS; r++) {
  let t = process.cpuUsage();
  const reader = await EngineReader.open(store);
  readerCpu.push(cpuMs(t));
  await reader.close();
  t = process.cpuUsage();
  const writer = await Engine.open(store, PAGED);
  writerCpu.push(cpuMs(t));
  store.reset();
  t = process.cpuUsage();
  for (const k of coldKeys) for (let p = writer.warm([k]); p; p = writer.warm([k])) await p;
  coldUs.push((cpuMs(t) * 1000) / coldKeys.length);
  coldRequests = `${(store.counts.gets / coldKeys.length).toFixed(2)} gets, ${(store.counts.bytesOut / coldKeys.length / 1024).toFixed(1)} KiB per read`;
  for (const k of coldKeys) if (writer.get(k)?.byteLength !== VALUE_BYTES) throw new Error(`${k} not read back`);
  await writer.close();
}
console.log(
  `segment-sum-ab ${RUNTIME}: KEYS=${KEYS} VALUE_BYTES=${VALUE_BYTES} ROUNDS=${ROUNDS} COLD=${coldKeys.length}, node ${process.version}, load ${loadavg()[0]!.toFixed(1)}`,
);
console.log(`  EngineReader.open CPU p50 ${median(readerCpu).toFixed(1)} ms`);
console.log(`  Engine.open, paged, CPU p50 ${median(writerCpu).toFixed(1)} ms`);
console.log(`  cold reads of every block, CPU p50 ${median(coldUs).toFixed(1)} µs per block (${coldRequests})`);
