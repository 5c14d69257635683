/**
 * @module The engine's memtable operations of the side-by-side workload,
 * recorded once and replayed against the layered state of two or more
 * compiled checkouts, alternating, to time the memtable alone (on a shared
 * machine the whole step's CPU moves by more than a memtable change).
 *
 * The first checkout records: every `get`, `has`, `set` and `delete` of its
 * engine's `LayeredState` while N runs of the workload (as in
 * step-cpu-ab.ts: 10-step runs on a MemoryStore, CONC in flight) run. Each
 * replay applies them in order to a fresh `LayeredState` of a checkout
 * (default options, as the engine's own), with each key made again from two
 * parts, as the queue builds its keys, so no string comes hashed or
 * flattened from an earlier pass (`FRESH=0`: the recorded strings as they
 * are). Reported: CPU µs per recorded step for
 * each pass, and the median of the passes after the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `N=300 PASSES=20 npx tsx bench/memtable-replay.ts <checkout A> <checkout B>`.
 */
import { loadavg } from "node:os";
import { median } from "./support/percentile.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN as M } from "./support/step-workload.js";

type State = typeof import("../runtime/engine/layered-state.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const PASSES = env("PASSES", 20);
/** 0: replay the recorded key strings themselves (hashed and flattened after the first pass). */
const FRESH = env("FRESH", 1);
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const states: State[] = [];
for (const d of dirs) states.push(await loadCheckout<State>(d, "dist/runtime/engine/layered-state.js"));
const T = await loadCheckout(dirs[0]!);

/** One recorded operation: kind, the key in two parts (split after its last `/`), the value set. */
type Op = [kind: 0 | 1 | 2 | 3, head: string, tail: string, value: unknown];
const KINDS = ["get", "has", "set", "delete"] as const;
const ops: Op[] = [];
let on = false;
const proto = states[0]!.LayeredState.prototype as unknown as Record<string, (this: unknown, key: string, ...rest: unknown[]) => unknown>;
const originals = KINDS.map((m) => proto[m]!);
for (const [kind, m] of KINDS.entries()) {
  const orig = originals[kind]!;
  proto[m] = function (this: unknown, key: string, ...rest: unknown[]) {
    if (on) {
      const at = key.lastIndexOf("/") + 1;
      ops.push(FRESH ? [kind as Op[0], key.slice(0, at), key.slice(at), rest[0]] : [kind as Op[0], "", key, rest[0]]);
    }
    return orig.call(this, key, ...rest);
  };
}

const workload = await openStepWorkload(T, new T.MemoryStore());
on = true;
await workload.drive(N, CONC);
on = false;
await workload.close();
for (const [kind, m] of KINDS.entries()) proto[m] = originals[kind]!;
const steps = N * M;

function replay(S: State): number {
  const s = new S.LayeredState();
  const t0 = process.cpuUsage();
  for (const [kind, head, tail, value] of ops) {
    const key = FRESH ? head + tail : tail;
    if (kind === 0) s.get(key);
    else if (kind === 1) s.has(key);
    else if (kind === 2) s.set(key, value as Uint8Array);
    else s.delete(key);
  }
  const c = process.cpuUsage(t0);
  s.stopIdleMerges();
  return (c.user + c.system) / steps;
}

console.log(`${ops.length} operations over ${steps} steps (N=${N}, ${CONC} in flight), load ${loadavg()[0]!.toFixed(2)}`);
const results = dirs.map(() => [] as number[]);
for (let p = 0; p < PASSES; p++) {
  // Each pass in the other order, so neither checkout always runs first.
  const order = p % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
  for (const i of order) results[i]!.push(replay(states[i]!));
}
for (const [i, d] of dirs.entries()) {
  const xs = results[i]!.slice(2);
  console.log(`${d}: ${xs.map((x) => x.toFixed(2)).join(", ")} (median ${median(xs).toFixed(2)} µs/step)`);
}
console.log(`load at end ${loadavg()[0]!.toFixed(2)}`);
