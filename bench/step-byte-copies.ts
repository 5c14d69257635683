/**
 * @module The copies of a workflow step's bytes per step of a compiled
 * checkout, by kind and by the function that makes them, while the
 * side-by-side workload (bench/support/step-workload.ts, 10-step runs on a
 * MemoryStore) runs N runs with CONC in flight:
 * - `slice`: byte arrays copied out with an array buffer of their own
 *   (`Uint8Array.prototype.slice`: a record encoder's copy out of its
 *   scratch, `copyBytes`, the stores' copies), each an array buffer and a
 *   backing store outside the heap;
 * - `set`: bytes copied into an array that already exists
 *   (`Uint8Array.prototype.set`: a value into the WAL object's buffer, into
 *   the engine's value arena, a buffer grown);
 * - `latin1`: strings of one character per byte made from bytes (Node's
 *   `latin1Slice`: a value the memtable keeps packed, a decoded string).
 * Each is counted with its bytes, and attributed to the function that
 * called it (the nearest frame of the checkout), so a copy removed shows
 * as a line gone. Deterministic: load does not move it.
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

let on = false;
/** Per kind and calling function: copies and bytes. */
const tally = new Map<string, { copies: number; bytes: number }>();
const totals = new Map<string, { copies: number; bytes: number; small: number }>();

/** The calling function of the checkout (the first frame past this module and Node's own). */
function caller(): string {
  const lines = (new Error().stack ?? "").split("\n");
  for (let i = 3; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.includes("step-byte-copies") || line.includes("node:")) continue;
    // The function, and the one that called it when it is a helper that copies for others.
    let name = frameName(line);
    for (let j = i + 1; j < lines.length && HELPERS.has(frameName(lines[j - 1]!)); j++) name += ` < ${frameName(lines[j]!)}`;
    return name;
  }
  return "(unknown)";
}

/** Helpers that copy for their callers: their caller is named too. */
const HELPERS = new Set(["latin1Of", "packValue", "copyBytes", "latin1", "finish"]);

function frameName(line: string): string {
  const m = /at (?:async )?([^ ]+) \(/.exec(line);
  return m === null ? "(anonymous)" : m[1]!;
}

function count(kind: string, n: number): void {
  const site = `${kind} ${caller()}`;
  const t = tally.get(site) ?? { copies: 0, bytes: 0 };
  t.copies++;
  t.bytes += n;
  tally.set(site, t);
  const k = totals.get(kind) ?? { copies: 0, bytes: 0, small: 0 };
  k.copies++;
  k.bytes += n;
  // Up to 2 KiB: what a record or a key's value takes, not a stored object.
  if (n <= 2048) k.small++;
  totals.set(kind, k);
}

// Patched before the checkout loads: its modules take Node's latin1 writer when they load.
const slice = Uint8Array.prototype.slice;
Uint8Array.prototype.slice = function (this: Uint8Array, start?: number, end?: number) {
  const out = slice.call(this, start, end);
  if (on) count("slice", out.byteLength);
  return out;
} as typeof slice;
const set = Uint8Array.prototype.set;
Uint8Array.prototype.set = function (this: Uint8Array, source: ArrayLike<number>, offset?: number) {
  if (on && ArrayBuffer.isView(source)) count("set", (source as Uint8Array).length);
  return set.call(this, source, offset);
} as typeof set;
const proto = Buffer.prototype as unknown as { latin1Slice?: (this: Uint8Array, start: number, end: number) => string };
const latin1 = proto.latin1Slice;
if (latin1 !== undefined) {
  proto.latin1Slice = function (this: Uint8Array, start: number, end: number) {
    const out = latin1.call(this, start, end);
    if (on) count("latin1", out.length);
    return out;
  };
}

const T = await loadCheckout<Taquba>(dir);
await measureOnMemoryStore(T, N, CONC, (m) => {
  on = m;
});
Uint8Array.prototype.slice = slice;
Uint8Array.prototype.set = set;
if (latin1 !== undefined) proto.latin1Slice = latin1;
const steps = N * M;
for (const [kind, t] of totals) {
  console.log(
    `${kind}: ${(t.copies / steps).toFixed(3)} copies per step, ${(t.small / steps).toFixed(3)} of them up to 2 KiB, ${(t.bytes / steps).toFixed(0)} bytes per step`,
  );
}
console.log(`by site (at least 0.01 a step), per step (N=${N}, ${CONC} in flight):`);
for (const [site, t] of [...tally].sort((a, b) => b[1].bytes - a[1].bytes)) {
  if (t.copies / steps < 0.01) continue;
  console.log(`  ${site.padEnd(48)} ${(t.copies / steps).toFixed(3)} copies ${(t.bytes / steps).toFixed(0).padStart(6)} B`);
}
