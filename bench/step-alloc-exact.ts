/**
 * @module Bytes of V8 heap one workflow step allocates, counted exactly
 * rather than sampled: the new space is made large enough that the timed
 * runs allocate without a single collection, so the heap's growth over them
 * is what they allocated (array buffers' contents, outside the heap, are not
 * counted). The same workload as step-alloc-sites.ts (10-step runs on a
 * MemoryStore, submit, wait and outcome included), after a warm-up.
 *
 * A pass in which any collection ran is reported as such and not counted.
 * One at a time (`CONC=1`) the figure repeats to a few bytes per step at any
 * load; with many in flight it moves with timing (WAL groups per step), so
 * compare checkouts alternating.
 *
 * Run: `npm run build` in the checkout, then
 * `N=60 CONC=1 PASSES=3 node --expose-gc --min-semi-space-size=256 --max-semi-space-size=256 --import tsx bench/step-alloc-exact.ts <checkout>`.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 60);
const CONC = env("CONC", 1);
const PASSES = env("PASSES", 3);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc (and a large --min-semi-space-size, see the module note)");
const T = await loadCheckout<Taquba>(dir);

let collections = 0;
const observer = new PerformanceObserver((list) => {
  collections += list.getEntries().length;
});
observer.observe({ entryTypes: ["gc"] });

const w = await openStepWorkload(T, new T.MemoryStore());
const perStep: string[] = [];
try {
  await w.drive(100, CONC);
  for (let p = 0; p < PASSES; p++) {
    gc();
    // The observer hears of the forced collection in a later turn: let it, then start counting.
    await new Promise((r) => setTimeout(r, 50));
    collections = 0;
    const before = getHeapStatistics().used_heap_size;
    await w.drive(N, CONC);
    const after = getHeapStatistics().used_heap_size;
    await new Promise((r) => setTimeout(r, 50));
    perStep.push(collections === 0 ? ((after - before) / (N * M)).toFixed(0) : `(${collections} collections: not counted)`);
  }
} finally {
  observer.disconnect();
  await w.close();
}
console.log(`${dir}: N=${N} CONC=${CONC} load ${loadAverageText()}`);
console.log(`heap bytes allocated per step, pass by pass: ${perStep.join(", ")}`);
