/**
 * @module The memtable's writes of a workflow step, replayed on one
 * checkout's compiled `Memtable` with nothing else around them, for
 * counting machine instructions with callgrind. The keys are the ones a
 * continuing step commits (bench/step-key-ops.ts): the next job's record and
 * claim marker set, the acked job's deleted, a history entry added, the
 * run's step pointer and the queue's counters written over; with READS=1
 * also the step's reads of the run record, the step pointer, the job record
 * and the counters. Before the steps the table holds K finished runs (a run
 * record, a step pointer and ten history entries each) and CONC runs in
 * flight; steps go round the runs in flight, as a busy queue's do.
 *
 * Run it at N and 2N steps with KEYS at 2N (the keys made for that many
 * steps in both runs) and subtract: start-up, compilation and the keys'
 * making cancel, what is left is the cost of N steps in that checkout's map.
 *
 *   npx esbuild bench/memtable-step-keys.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/step-keys.mjs
 *   N=20000 KEYS=40000 valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --no-concurrent-recompilation --expose-gc bench/.out/step-keys.mjs <checkout>
 *
 * LOOKUP=1 adds the look-up of the next job's record key before its write,
 * which a step's insert made until the next job's id was inserted as one
 * the queue drew (a miss: the id is new).
 *
 * ENDED=1 gives the K finished runs what a run's end leaves in the
 * workload's memtable instead: its history, an outcome record and its
 * run-index and run-ended entries (its run record and step pointer deleted),
 * so only the runs in flight hold run records and step pointers.
 *
 * SLOT=1 replaces the claim markers' two ops (the next job's set, the acked
 * job's delete) with one write over a key each run in flight keeps for its
 * whole chain, as a claimed entry per chain rewritten in place would make.
 *
 * HEADS=<prefix>,<prefix>... opens the table with those key heads
 * (`EngineOptions.keyHeads`; the checkout must have them): each prefix's
 * keys get a tree of their own in the table's map.
 *
 * MAKE=plus|join makes the history entry's key in the step, from the
 * history prefix and the entry's suffix, as a key family makes it
 * (engine/key-family.ts): `prefix + suffix` (a pair of strings, which the
 * map's first comparison flattens through the engine's runtime) or a join
 * (one flat string); and makes the run record's and step pointer's keys
 * the same way once per run, as the queue keeps them. Unset: every key is
 * flat and made before the steps.
 *
 * (`npm run build` in the checkout first; callgrind prints the total as
 * "Collected".) Without callgrind it prints the wall time per step, which a
 * shared machine makes noisy.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

type MemtableModule = typeof import("../runtime/engine/memtable.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const { Memtable } = (await import(pathToFileURL(resolve(dir, "dist/runtime/engine/memtable.js")).href)) as MemtableModule;
const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 20_000);
const K = env("K", 2_000);
const CONC = env("CONC", 50);
const READS = env("READS", 0);
const KEYS = env("KEYS", N);
const LOOKUP = env("LOOKUP", 0);
const SLOT = env("SLOT", 0);
const ENDED = env("ENDED", 0);
const MAKE = process.env.MAKE ?? "";
if (!["", "plus", "join"].includes(MAKE)) throw new Error(`MAKE must be plus or join, got ${MAKE}`);
/** A key of `prefix` and `suffix` as MAKE says (flat when unset). */
const make = (prefix: string, suffix: string) => (MAKE === "plus" ? prefix + suffix : MAKE === "join" ? [prefix, suffix].join("") : flat(prefix + suffix));
/** DROP=counters leaves out the counters' write, DROP=claims the claim markers' (what a step without that key would cost). */
const DROP = process.env.DROP ?? "";
if (!["", "counters", "claims"].includes(DROP)) throw new Error(`DROP must be counters or claims, got ${DROP}`);
for (const [name, v] of Object.entries({ N, K, CONC, KEYS })) {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer, got ${v}`);
}

/** A flat copy of `s`: template literals make concatenations, the engine's keys are flat (decoded or built once). */
const flat = (s: string) => Buffer.from(s, "latin1").toString("latin1");
const RUN = "u/workflow/runs/workflow-steps/";
const HISTORY = "u/workflow/history/workflow-steps/";
const STEP = "u/workflow/steps/workflow-steps/";
const COUNTERS = flat("n/workflow-steps");
const OUTCOME = "u/workflow/outcomes/workflow-steps/";
const RUN_INDEX = "u/workflow/run-index/workflow-steps/";
const RUN_ENDED = "u/workflow/run-ended/workflow-steps/0/";
const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(10, "0")}`;
const value = new Uint8Array(64);

const HEADS = process.env.HEADS === undefined || process.env.HEADS === "" ? [] : process.env.HEADS.split(",");
type KeyHeadsModule = typeof import("../runtime/engine/key-heads.js");
const heads =
  HEADS.length === 0 ? undefined : ((await import(pathToFileURL(resolve(dir, "dist/runtime/engine/key-heads.js")).href)) as KeyHeadsModule).KeyHeads.of(HEADS);
const t = new Memtable<Uint8Array>(heads);
let next = 0;
for (let r = 0; r < K; r++) {
  const run = id(next++);
  if (ENDED === 0) {
    t.set(flat(RUN + run), value);
    t.set(flat(STEP + run), value);
  } else {
    t.set(flat(OUTCOME + run), value);
    t.set(flat(RUN_INDEX + run), value);
    t.set(flat(RUN_ENDED + run), value);
  }
  for (let s = 0; s < 10; s++) t.set(flat(`${HISTORY}${run}/${s}`), value);
}
const runs: string[] = [];
const jobs: string[] = [];
const slots: string[] = [];
const steps: number[] = [];
for (let r = 0; r < CONC; r++) {
  runs.push(id(next++));
  jobs.push(id(next++));
  steps.push(0);
  t.set(flat(RUN + runs[r]!), value);
  t.set(flat(`j/${jobs[r]}`), value);
  slots.push(flat(`c/workflow-steps/${jobs[r]}`));
  t.set(slots[r]!, value);
}

// Every key made before the steps, for KEYS steps whatever N is, so runs at N and 2N with one KEYS differ only in the steps.
interface StepKeys {
  job: string;
  claim: string;
  oldJob: string;
  oldClaim: string;
  history: string;
  /** The history entry's suffix (its key with MAKE is made in the step). */
  historySuffix: string;
  step: string;
  run: string;
  /** The run's chain slot: the claim marker of its first job, written over at each step with SLOT=1. */
  slot: string;
}
const plan: StepKeys[] = [];
// With MAKE, each run's record and pointer keys are made once and kept, as the queue keeps a run's keys.
const runKeys = new Map<string, { step: string; run: string }>();
for (let i = 0; i < Math.max(N, KEYS); i++) {
  const r = i % CONC;
  const job = id(next++);
  const old = jobs[r]!;
  jobs[r] = job;
  const s = steps[r]!++;
  plan.push({
    job: flat(`j/${job}`),
    claim: flat(`c/workflow-steps/${job}`),
    oldJob: flat(`j/${old}`),
    oldClaim: flat(`c/workflow-steps/${old}`),
    history: flat(`${HISTORY}${runs[r]}/${s}`),
    historySuffix: flat(`${runs[r]}/${s}`),
    step: MAKE === "" ? flat(STEP + runs[r]) : runKey(runs[r]!).step,
    run: MAKE === "" ? flat(RUN + runs[r]) : runKey(runs[r]!).run,
    slot: slots[r]!,
  });
}

function runKey(run: string): { step: string; run: string } {
  let k = runKeys.get(run);
  if (k === undefined) runKeys.set(run, (k = { step: make(STEP, run), run: make(RUN, run) }));
  return k;
}

let sink = 0;
// With --expose-gc, the garbage of the keys' making is collected before the steps instead of during them.
(globalThis as { gc?: () => void }).gc?.();
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  const p = plan[i]!;
  if (READS !== 0) {
    if (t.get(p.run) !== undefined) sink++;
    if (t.get(p.step) !== undefined) sink++;
    if (t.get(p.oldJob) !== undefined) sink++;
    if (t.get(COUNTERS) !== undefined) sink++;
  }
  if (LOOKUP !== 0 && t.get(p.job) !== undefined) sink++;
  t.set(p.job, value);
  if (SLOT !== 0) t.set(p.slot, value);
  else if (DROP !== "claims") {
    t.set(p.claim, value);
    t.delete(p.oldClaim);
  }
  t.delete(p.oldJob);
  t.set(MAKE === "" ? p.history : make(HISTORY, p.historySuffix), value);
  t.set(p.step, value);
  if (DROP !== "counters") t.set(COUNTERS, value);
}
const ms = performance.now() - t0;
console.log(
  `memtable-step-keys: N=${N} K=${K} CONC=${CONC} READS=${READS} LOOKUP=${LOOKUP} SLOT=${SLOT} DROP=${DROP || "none"} MAKE=${MAKE || "none"} HEADS=${HEADS.join(",") || "none"} size ${t.size} (sink ${sink}); ${((ms * 1e6) / N).toFixed(0)} ns per step`,
);
