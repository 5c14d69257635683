/**
 * @module Byte arrays copied out with an array buffer of their own per
 * workflow step of a compiled checkout: every `Uint8Array.prototype.slice`
 * (a record encoder's copy out of its scratch, `copyBytes`, the stores'
 * copies), counted with its bytes while the side-by-side workload
 * (bench/support/step-workload.ts, 10-step runs on a MemoryStore) runs N
 * runs with CONC in flight. Each such copy allocates an array buffer and
 * its backing store outside the heap. Deterministic: load does not move it.
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/step-byte-copies.ts <checkout>`.
 */
import { loadCheckout, measureOnMemoryStore, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

let on = false;
let copies = 0;
let bytes = 0;
let small = 0;
const slice = Uint8Array.prototype.slice;
Uint8Array.prototype.slice = function (this: Uint8Array, start?: number, end?: number) {
  const out = slice.call(this, start, end);
  if (on) {
    copies++;
    bytes += out.byteLength;
    // Up to 2 KiB: what a record or a key's value takes, not a stored object.
    if (out.byteLength <= 2048) small++;
  }
  return out;
} as typeof slice;

await measureOnMemoryStore(T, N, CONC, (m) => {
  on = m;
});
Uint8Array.prototype.slice = slice;
const steps = N * M;
console.log(
  `${(copies / steps).toFixed(3)} copies per step, ${(small / steps).toFixed(3)} of them up to 2 KiB, ${(bytes / steps).toFixed(0)} bytes per step (N=${N}, ${CONC} in flight)`,
);
