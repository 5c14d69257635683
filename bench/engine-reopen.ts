/**
 * @module Benchmark: time to reopen an engine (and a reader) over a store
 * holding 100,000 keys, right after a checkpoint and with 10,000
 * uncheckpointed commits (one WAL object each) on top.
 *
 * Run: npx tsx bench/engine-reopen.ts
 * Env: KEYS (100000), COMMITS (10000), VALUE_BYTES (100), LATENCY_MS (0: off;
 * set e.g. 20 to also time the reopen against a store with that latency).
 */
import { Engine, EngineReader, MemoryStore, WriteBatch, withLatency, type ObjectStore } from "../runtime/index.js";

const env = (name: string, dflt: number) => (process.env[name] === undefined ? dflt : Number(process.env[name]));
const KEYS = env("KEYS", 100_000);
const COMMITS = env("COMMITS", 10_000);
const VALUE_BYTES = env("VALUE_BYTES", 100);
const LATENCY_MS = env("LATENCY_MS", 0);

const key = (i: number) => `job/${String(i).padStart(8, "0")}`;

async function timeOpen(label: string, store: ObjectStore, expectKeys: number): Promise<void> {
  let t0 = performance.now();
  const engine = await Engine.open(store, { checkpointWalObjects: 0 });
  const writerMs = performance.now() - t0;
  let n = 0;
  for (const _ of engine.scan()) n++;
  if (n !== expectKeys) throw new Error(`expected ${expectKeys} keys after reopen, found ${n}`);
  await engine.close();
  t0 = performance.now();
  await EngineReader.open(store);
  const readerMs = performance.now() - t0;
  console.log(`  ${label.padEnd(48)} Engine.open ${writerMs.toFixed(0).padStart(6)} ms   EngineReader.open ${readerMs.toFixed(0).padStart(6)} ms`);
}

console.log(`engine-reopen: KEYS=${KEYS} COMMITS=${COMMITS} VALUE_BYTES=${VALUE_BYTES} LATENCY_MS=${LATENCY_MS}, node ${process.version}`);
const store = new MemoryStore();
const value = new Uint8Array(VALUE_BYTES).fill(3);
{
  const engine = await Engine.open(store, { checkpointWalObjects: 0 });
  for (let i = 0; i < KEYS; i += 1000) {
    const b = new WriteBatch();
    for (let j = i; j < Math.min(KEYS, i + 1000); j++) b.put(key(j), value);
    await engine.commit(b);
  }
  await engine.checkpoint();
  await engine.close();
}
await timeOpen(`${KEYS} keys, checkpointed`, store, KEYS);
if (LATENCY_MS > 0) await timeOpen(`  same, ${LATENCY_MS} ms store latency`, withLatency(store, { ms: LATENCY_MS }), KEYS);
{
  // flushIntervalMs 0 and awaited one by one: every commit is its own WAL object.
  const engine = await Engine.open(store, { checkpointWalObjects: 0, flushIntervalMs: 0 });
  for (let i = 0; i < COMMITS; i++) await engine.commit(new WriteBatch().put(key((i * 7) % KEYS), value).put(`extra/${i}`, value));
  const walObjects = engine.stats.walPuts;
  await engine.close();
  console.log(`  (${walObjects} WAL objects written after the checkpoint)`);
}
await timeOpen(`${KEYS} keys + ${COMMITS} uncheckpointed commits`, store, KEYS + COMMITS);
if (LATENCY_MS > 0) await timeOpen(`  same, ${LATENCY_MS} ms store latency`, withLatency(store, { ms: LATENCY_MS }), KEYS + COMMITS);
