/**
 * @module The memtable's ordered-map descents per workflow step of a
 * compiled checkout, and the key comparisons they make: each `get`, `set`
 * and `delete` of an `OrderedMap` (by outcome) and each cursor a scan opens,
 * counted while the side-by-side workload (bench/support/step-workload.ts)
 * runs N runs with CONC in flight.
 *
 * Comparisons are counted on a shadow of each map given the same calls in
 * the same order, built with a counting comparator: its searches are the
 * built-in order's searches step for step, except that its leaves are never
 * packed (a packed leaf finds a key by its own search, not counted here).
 * `SEQ=1` prints a steady-state stretch of the calls, key ids shortened.
 *
 * What-if counts for cuts of the descents: the comparisons of the same
 * calls on maps split by the key's first unit (one map per family head);
 * writes of a key one of the last four hits of `get` found (a get's descent
 * reused by the write after it); deletes of keys put new while counting
 * (keys that would never have entered an ordered part built lazily).
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/memtable-descents.ts <checkout>`.
 */
import { loadCheckout, measureOnMemoryStore, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

type MapModule = typeof import("../runtime/engine/ordered-map.js");
type AnyMap = import("../runtime/engine/ordered-map.js").OrderedMap<unknown>;

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const O = await loadCheckout<MapModule>(dir, "dist/runtime/engine/ordered-map.js");
const T = await loadCheckout<Taquba>(dir);
const P = await loadCheckout<typeof import("../runtime/engine/packed-keys.js")>(dir, "dist/runtime/engine/packed-keys.js");

let compares = 0;
const counting = (a: string, b: string) => {
  compares++;
  return a === b ? 0 : a < b ? -1 : 1;
};
// Each map's shadow, made on the map's first counted call from its entries then (uncounted).
const shadows = new WeakMap<AnyMap, AnyMap>();
function shadowOf(map: AnyMap): AnyMap {
  let s = shadows.get(map);
  if (s === undefined) {
    const keys: string[] = [];
    const values: unknown[] = [];
    map.forEachPair((k, v) => {
      keys.push(k);
      values.push(v);
    });
    // With the map's key heads (a checkout without them has none), so the shadow descends the trees the map does.
    s = O.OrderedMap.fromSorted(keys, values, counting, (map as { heads?: import("../runtime/engine/key-heads.js").KeyHeads }).heads);
    shadows.set(map, s);
  }
  return s;
}

// The what-ifs: a shadow per map and first unit; the last hits; the keys put new while counting.
const split = new WeakMap<AnyMap, Map<number, AnyMap>>();
let splitCompares = 0;
function splitOf(map: AnyMap, key: string): AnyMap {
  let byHead = split.get(map);
  if (byHead === undefined) {
    byHead = new Map();
    const lists = new Map<number, [string[], unknown[]]>();
    map.forEachPair((k, v) => {
      const h = k.length === 0 ? -1 : k.charCodeAt(0);
      let l = lists.get(h);
      if (l === undefined) lists.set(h, (l = [[], []]));
      l[0].push(k);
      l[1].push(v);
    });
    for (const [h, [ks, vs]] of lists) byHead.set(h, O.OrderedMap.fromSorted(ks, vs, counting));
    split.set(map, byHead);
  }
  const h = key.length === 0 ? -1 : key.charCodeAt(0);
  let m = byHead.get(h);
  if (m === undefined) byHead.set(h, (m = new O.OrderedMap<unknown>(counting)));
  return m;
}
/** A key's family for `FAMILIES=1`: its first two units, and under `u/workflow/` the name after it. */
function familyOf(key: string): string {
  if (!key.startsWith("u/workflow/")) return key.slice(0, 2);
  const end = key.indexOf("/", 11);
  return end < 0 ? key : key.slice(0, end + 1);
}
// `FAMILIES=1`: keys held by family, summed over samples of the map a call went to.
const held = new Map<string, number>();
let samples = 0;
function sampleFamilies(map: AnyMap): void {
  samples++;
  map.forEachPair((k) => {
    const f = familyOf(k);
    held.set(f, (held.get(f) ?? 0) + 1);
  });
}
const lastHits: string[] = [];
let writesAfterGet = 0;
const putNew = new Set<string>();
let deletesOfNew = 0;
const calls = new Map<string, number>();
const depthSum = { compares: 0, sizeLog: 0, n: 0 };
const seq: string[] = [];
let on = false;
let seen = 0;
const short = (k: string) => k.replace(/[0-9A-Z]{20,}/g, (m) => `<${m.slice(-4)}>`).replace(/\d{6,}/g, "<n>");
const proto = O.OrderedMap.prototype as unknown as Record<string, (this: AnyMap, key: string, ...rest: unknown[]) => unknown>;
for (const m of ["get", "set", "delete", "entries", "entriesReversed"]) {
  const orig = proto[m]!;
  proto[m] = function (this: AnyMap, key: string, ...rest: unknown[]) {
    if (!on) {
      shadows.delete(this);
      split.delete(this);
      return orig.call(this, key, ...rest);
    }
    const shadow = shadowOf(this);
    const before = compares;
    const size = this.size;
    const sr = (orig as (this: AnyMap, ...a: unknown[]) => unknown).call(shadow, key, ...rest);
    if (m === "entries" || m === "entriesReversed") (sr as Iterator<unknown>).next();
    const whole = compares;
    if (m === "get" || m === "set" || m === "delete") (orig as (this: AnyMap, ...a: unknown[]) => unknown).call(splitOf(this, key), key, ...rest);
    splitCompares += compares - whole;
    compares = whole;
    const r = orig.call(this, key, ...rest);
    if (m === "get" && r !== undefined) {
      lastHits.push(key);
      if (lastHits.length > 4) lastHits.shift();
    } else if (m === "set" || m === "delete") {
      if (lastHits.includes(key)) writesAfterGet++;
      if (m === "set" && r === true) putNew.add(key);
      if (m === "delete" && r === true && putNew.delete(key)) deletesOfNew++;
    }
    const outcome =
      m === "get" ? (r === undefined ? " miss" : " hit") : m === "set" ? (r ? " new" : " overwrite") : m === "delete" ? (r ? " hit" : " miss") : "";
    const kind = process.env.FAMILIES === undefined ? `${m}${outcome}` : `${m}${outcome} ${familyOf(String(key))}`;
    calls.set(kind, (calls.get(kind) ?? 0) + 1);
    if (process.env.FAMILIES !== undefined && depthSum.n % 2000 === 0) sampleFamilies(this);
    depthSum.compares += compares - before;
    depthSum.sizeLog += Math.log2(size + 1);
    depthSum.n++;
    if (process.env.SEQ !== undefined && ++seen > env("SEQ_FROM", 20_000) && seq.length < env("SEQ_LEN", 60))
      seq.push(`${kind.padEnd(14)} ${short(String(key))}`);
    return r;
  };
}
// Packed leaves: searches of their keys, leaves packed, leaves made strings again (every key made).
const packed = { find: 0, of: 0, keys: 0 };
const packedProto = P.PackedKeys.prototype as unknown as Record<string, (this: unknown, ...a: unknown[]) => unknown>;
for (const m of ["find", "keys"] as const) {
  const orig = packedProto[m]!;
  packedProto[m] = function (this: unknown, ...a: unknown[]) {
    if (on) packed[m]++;
    return orig.apply(this, a);
  };
}
const packedOf = P.PackedKeys.of;
P.PackedKeys.of = (keys: readonly string[]) => {
  if (on) packed.of++;
  return packedOf(keys);
};
// A map's clone or a map built from sorted entries gets its shadow from its entries on first use.

await measureOnMemoryStore(T, N, CONC, (m) => {
  on = m;
});
const steps = N * M;
for (const [k, v] of [...calls].sort((a, b) => b[1] - a[1])) console.log(`${(v / steps).toFixed(3).padStart(7)} ${k}`);
console.log(`${(depthSum.n / steps).toFixed(2)} descents per step (N=${N}, ${CONC} in flight)`);
console.log(
  `${(depthSum.compares / steps).toFixed(1)} key comparisons per step, ${(depthSum.compares / depthSum.n).toFixed(2)} per descent; mean log2(keys + 1) ${(depthSum.sizeLog / depthSum.n).toFixed(2)}`,
);
console.log(
  `what-ifs per step: ${(splitCompares / steps).toFixed(1)} comparisons on maps split by first unit; ${(writesAfterGet / steps).toFixed(2)} writes of a key one of the last four get hits found; ${(deletesOfNew / steps).toFixed(2)} deletes of keys put new while counting`,
);
console.log(
  `packed leaves per step: ${(packed.find / steps).toFixed(3)} searches (the shadows' included), ${(packed.of / steps).toFixed(3)} packed, ${(packed.keys / steps).toFixed(3)} made strings again`,
);
if (samples > 0)
  console.log(
    `keys held by family (mean of ${samples} samples): ${[...held]
      .sort((a, b) => b[1] - a[1])
      .map(([f, n]) => `${f} ${(n / samples).toFixed(0)}`)
      .join(", ")}`,
  );
if (seq.length > 0) console.log(seq.join("\n"));
