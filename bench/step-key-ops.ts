/**
 * @module The engine's memtable operations per workflow step of a compiled
 * checkout, by kind and key family: each `get`, `has`, `set` and `delete`
 * of its layered state (`LayeredState`), counted while the side-by-side
 * workload (bench/support/step-workload.ts, 10-step runs on a MemoryStore) runs N
 * runs with CONC in flight. Ids, times and counters in keys are folded, so
 * the families show: `get j/<id>` is every read of a job record. Then the
 * engine's own reads by family: `Engine.get` (the value copied out of the
 * memtable's packed form) and `Engine.valueToken` (a token, nothing copied).
 *
 * `STACKS=<family>` (say `STACKS="get j/<id>"`) prints who makes the calls
 * of that family: the runtime's frames of each call's stack, by count.
 *
 * Last, the look-ups of caller keys among the queue's kept keys
 * (`KeptStrings.get`, each hashing the key string it is handed), hits and
 * misses, by the runtime's frames calling them.
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/step-key-ops.ts <checkout>`.
 */
import { loadCheckout, measureOnMemoryStore, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

type State = typeof import("../runtime/engine/layered-state.js");
type EngineModule = typeof import("../runtime/engine/engine.js");
type KeptModule = typeof import("../runtime/queue/kept-strings.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const L = await loadCheckout<State>(dir, "dist/runtime/engine/layered-state.js");
const T = await loadCheckout<Taquba>(dir);
const E = await loadCheckout<EngineModule>(dir, "dist/runtime/engine/engine.js");
const K = await loadCheckout<KeptModule>(dir, "dist/runtime/queue/kept-strings.js");

const counts = new Map<string, number>();
const stacks = new Map<string, number>();
const stackFamily = process.env.STACKS;
if (stackFamily !== undefined) Error.stackTraceLimit = 40;
// The runtime's frames of a stack (source-mapped), innermost first, the engine's own left out.
const callers = (stack: string) =>
  stack
    .split("\n")
    .slice(1)
    .filter((l) => /\/runtime\/(?!engine\/)/.test(l))
    .slice(0, 4)
    .map((l) => l.replace(/^\s*at /, "").replace(/\(\S*\/runtime\//, "("))
    .join(" < ");
let on = false;
const family = (k: string) =>
  k
    .replace(/[0-9A-Z]{20,}/g, "<id>")
    .replace(/\d{6,}/g, "<n>")
    .replace(/:\d+$/, ":<n>")
    .replace(/\/\d+$/, "/<n>");
const proto = L.LayeredState.prototype as unknown as Record<string, (this: unknown, key: string, ...rest: unknown[]) => unknown>;
for (const m of ["get", "has", "set", "delete"]) {
  const orig = proto[m]!;
  proto[m] = function (this: unknown, key: string, ...rest: unknown[]) {
    if (on) {
      const f = `${m} ${family(key)}`;
      counts.set(f, (counts.get(f) ?? 0) + 1);
      if (f === stackFamily) {
        const at = callers(new Error().stack ?? "");
        stacks.set(at, (stacks.get(at) ?? 0) + 1);
      }
    }
    return orig.call(this, key, ...rest);
  };
}

// The engine's own reads: `get` hands out the bytes (unpacked from the memtable's packed form), `valueToken` only a token.
const reads = new Map<string, number>();
const eproto = E.Engine.prototype as unknown as Record<string, ((this: unknown, key: string) => unknown) | undefined>;
for (const m of ["get", "valueToken"]) {
  const orig = eproto[m];
  if (orig === undefined) continue;
  eproto[m] = function (this: unknown, key: string) {
    if (on) {
      const f = `engine ${m} ${family(key)}`;
      reads.set(f, (reads.get(f) ?? 0) + 1);
    }
    return orig.call(this, key);
  };
}

// Look-ups among the kept keys, by caller: the frames above the queue's key modules.
const lookups = new Map<string, number>();
const kproto = K.KeptStrings.prototype as unknown as { get: (this: unknown, name: string) => string | undefined };
const kget = kproto.get;
const lookupCallers = (stack: string) =>
  stack
    .split("\n")
    .slice(2)
    .filter((l) => /\/runtime\//.test(l) && !/(kept-strings|user-keys)\.[jt]s:/.test(l))
    .slice(0, 3)
    .map((l) => l.replace(/^\s*at /, "").replace(/\(\S*\/runtime\//, "("))
    .join(" < ");
kproto.get = function (this: unknown, name: string) {
  const found = kget.call(this, name);
  if (on) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 12;
    const f = `${found === undefined ? "miss" : "hit "} ${lookupCallers(new Error().stack ?? "")}`;
    Error.stackTraceLimit = limit;
    lookups.set(f, (lookups.get(f) ?? 0) + 1);
  }
  return found;
};

await measureOnMemoryStore(T, N, CONC, (m) => {
  on = m;
});
const steps = N * M;
let total = 0;
for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) {
  total += v;
  if (v / steps >= 0.01) console.log(`${(v / steps).toFixed(3).padStart(7)} ${k}`);
}
console.log(`${(total / steps).toFixed(2)} memtable operations per step (N=${N}, ${CONC} in flight)`);
let copies = 0;
for (const [k, v] of [...reads].sort((a, b) => b[1] - a[1])) {
  if (k.startsWith("engine get ")) copies += v;
  if (v / steps >= 0.01) console.log(`${(v / steps).toFixed(3).padStart(7)} ${k}`);
}
console.log(`${(copies / steps).toFixed(2)} engine reads that copy a value out per step`);
for (const [k, v] of [...stacks].sort((a, b) => b[1] - a[1])) {
  if (v / steps >= 0.005) console.log(`${(v / steps).toFixed(3).padStart(7)} ${k}`);
}
let hits = 0;
let misses = 0;
for (const [k, v] of [...lookups].sort((a, b) => b[1] - a[1])) {
  if (k.startsWith("hit")) hits += v;
  else misses += v;
  if (v / steps >= 0.005) console.log(`${(v / steps).toFixed(3).padStart(7)} ${k}`);
}
console.log(`${(hits / steps).toFixed(3)} hits, ${(misses / steps).toFixed(3)} misses among the kept keys per step`);
