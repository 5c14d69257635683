/**
 * @module What records waiting to be paged cost on the heap: commits N
 * (argv[2], default 70,000: about two checkpoint intervals of a 1M fill)
 * records of 150 B under job-like keys to an engine that pages values and
 * never checkpoints on its own, so every record waits in the memtable (and
 * in the changed keys), then runs full collections and prints the heap used
 * above what it was before the commits, per record. Deterministic: no
 * checkpoint runs, the figure is what lives, not when the collector ran.
 *
 *   npx esbuild bench/waiting-values-heap.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/waiting.mjs
 *   node --expose-gc bench/.out/waiting.mjs 70000
 */
import { Engine, MemoryStore, WriteBatch } from "../runtime/index.js";

const N = Number(process.argv[2] ?? 70_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc");
const fullGc = () => {
  for (let i = 0; i < 3; i++) gc();
};

const engine = await Engine.open(new MemoryStore(), {
  pageValues: { keyPrefixes: ["j/"], minBytes: 64 },
  checkpointWalObjects: 1_000_000,
  checkpointWalBytes: 2 ** 40,
});
fullGc();
const before = process.memoryUsage();
const value = new Uint8Array(150).fill(7);
for (let i = 0; i < N; i += 1000) {
  const b = new WriteBatch();
  for (let j = i; j < Math.min(N, i + 1000); j++) b.put(["j/jobs/", String(j).padStart(16, "0")].join(""), value); // flat, as the queue's keys
  await engine.commit(b);
}
fullGc();
const after = process.memoryUsage();
const per = (a: number, b: number) => ((a - b) / N).toFixed(1);
console.log(
  `waiting-values-heap: ${N.toLocaleString("en-US")} records of 150 B waiting to be paged: heap ${per(after.heapUsed, before.heapUsed)} B/record, array buffers ${per(after.arrayBuffers, before.arrayBuffers)} B/record (${engine.stats.memtableFreezes} freezes, ${engine.stats.checkpoints} checkpoints, ${engine.stats.keyRuns} key runs)`,
);
await engine.close();
