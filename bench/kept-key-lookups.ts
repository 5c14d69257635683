/**
 * @module Lookups of kept engine key strings (queue/kept-strings.ts) per
 * workflow step of a compiled checkout: every `KeptStrings.get` (one or two
 * map probes, the second when the young generation misses) and how many
 * found nothing, counted while the side-by-side workload
 * (bench/support/step-workload.ts, 10-step runs on a MemoryStore) runs N
 * runs with CONC in flight. A lookup of a key built afresh hashes (and
 * flattens) it; a hit compares strings. The counts do not depend on load.
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/kept-key-lookups.ts <checkout>`.
 */
import { loadCheckout, measureOnMemoryStore, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

type Kept = typeof import("../runtime/queue/kept-strings.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const K = await loadCheckout<Kept>(dir, "dist/runtime/queue/kept-strings.js");
const T = await loadCheckout<Taquba>(dir);

let on = false;
let lookups = 0;
let misses = 0;
const get = K.KeptStrings.prototype.get;
K.KeptStrings.prototype.get = function (this: InstanceType<Kept["KeptStrings"]>, name: string): string | undefined {
  const v = get.call(this, name);
  if (on) {
    lookups++;
    if (v === undefined) misses++;
  }
  return v;
};

await measureOnMemoryStore(T, N, CONC, (m) => {
  on = m;
});
const steps = N * M;
console.log(`${dir}: ${(lookups / steps).toFixed(2)} kept-key lookups per step, ${(misses / steps).toFixed(2)} finding nothing (N=${N}, ${CONC} in flight)`);
