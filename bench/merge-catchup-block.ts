/**
 * How long one turn of a fill runs when key-run merges fall behind, in two
 * or more checkouts, alternating: a `LayeredState` filled the way the
 * queue fills it (two keys per job, a job record and a queue index entry,
 * in batches of BATCH jobs applied in one turn, an idle turn after each),
 * with the memtable and the merge bound scaled down (MEMTABLE keys,
 * MAX_MERGE entries) so that runs too large for a tier merge pile up past
 * `maxRuns` at a few million keys, as they do at defaults past about 20M
 * keys (a 10M-job fill).
 *
 * Prints per checkout: the longest write turn and the longest idle turn
 * (wall time), the most merge entries passed in one turn (deterministic:
 * what the turn's length is made of), when the longest write turn came
 * (jobs so far), the most runs seen, catch-ups, merges started and the fill
 * time.
 *
 *   npx tsx bench/merge-catchup-block.ts <checkout> [<checkout> ...]
 *   JOBS=1500000 MEMTABLE=4096 MAX_MERGE=262144 BATCH=1000 ROUNDS=2 npx tsx bench/merge-catchup-block.ts <a> <b>
 */
import { loadavg } from "node:os";
import { resolve } from "node:path";
import type * as LayeredStateModule from "../runtime/engine/layered-state.js";
import type * as RunMergeModule from "../runtime/engine/run-merge.js";

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("usage: merge-catchup-block.ts <checkout> [<checkout> ...]");
const JOBS = Number(process.env.JOBS ?? 1_500_000);
const MEMTABLE = Number(process.env.MEMTABLE ?? 4096);
const MAX_MERGE = Number(process.env.MAX_MERGE ?? 262_144);
const BATCH = Number(process.env.BATCH ?? 1000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
for (const [name, v] of Object.entries({ JOBS, MEMTABLE, MAX_MERGE, BATCH, ROUNDS }))
  if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${name} must be a whole number of at least 1, got ${v}`);

const VALUE = new Uint8Array(8).fill(3);
const turn = () => new Promise<void>((r) => setImmediate(r));

interface Loaded {
  dir: string;
  LayeredState: typeof LayeredStateModule.LayeredState;
  /** Entries the merges passed since the last reset. */
  passed: { n: number };
}

async function load(dir: string): Promise<Loaded> {
  const ls = (await import(resolve(dir, "runtime/engine/layered-state.ts"))) as typeof LayeredStateModule;
  const rm = (await import(resolve(dir, "runtime/engine/run-merge.ts"))) as typeof RunMergeModule;
  const passed = { n: 0 };
  const step = rm.RunMerge.prototype.step;
  rm.RunMerge.prototype.step = function (this: RunMergeModule.RunMerge, budget: number): boolean {
    const before = this.remaining;
    try {
      return step.call(this, budget);
    } finally {
      passed.n += before - this.remaining;
    }
  };
  return { dir, LayeredState: ls.LayeredState, passed };
}

async function fill(l: Loaded): Promise<string> {
  const state = new l.LayeredState({ memtableKeys: MEMTABLE, maxMergeEntries: MAX_MERGE });
  let writeMax = 0;
  let writeMaxAt = 0;
  let idleMax = 0;
  let passedMax = 0;
  let mostRuns = 0;
  const t0 = performance.now();
  for (let job = 0; job < JOBS; job += BATCH) {
    l.passed.n = 0;
    const t = performance.now();
    const end = Math.min(JOBS, job + BATCH);
    for (let i = job; i < end; i++) {
      const id = String(i).padStart(12, "0");
      state.set(`j/${id}`, VALUE);
      state.set(`p/queue/5/${id}`, VALUE);
    }
    const w = performance.now() - t;
    if (w > writeMax) {
      writeMax = w;
      writeMaxAt = end;
    }
    passedMax = Math.max(passedMax, l.passed.n);
    l.passed.n = 0;
    const i0 = performance.now();
    await turn();
    idleMax = Math.max(idleMax, performance.now() - i0);
    passedMax = Math.max(passedMax, l.passed.n);
    mostRuns = Math.max(mostRuns, state.runCount);
  }
  const s = (performance.now() - t0) / 1000;
  state.stopIdleMerges();
  const c = state.counters;
  return `| ${l.dir} | ${writeMax.toFixed(1)} ms (at job ${writeMaxAt.toLocaleString("en-US")}) | ${idleMax.toFixed(1)} ms | ${passedMax.toLocaleString("en-US")} | ${mostRuns} | ${state.runCount} | ${c.catchUps} | ${c.merges + c.rewrites} | ${s.toFixed(1)} s | ${loadavg()[0]!.toFixed(1)} |`;
}

const loaded: Loaded[] = [];
for (const d of dirs) loaded.push(await load(d));
console.log(
  `merge-catchup-block: ${JOBS.toLocaleString("en-US")} jobs (two keys each) in batches of ${BATCH}, memtableKeys ${MEMTABLE}, maxMergeEntries ${MAX_MERGE}, other settings default, ${ROUNDS} rounds alternating`,
);
console.log(
  "| checkout | longest write turn | longest idle turn | most merge entries in one turn | most runs | runs at end | catch-ups | merges started | fill time | load |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? loaded : [...loaded].reverse();
  for (const l of order) {
    (globalThis as { gc?: () => void }).gc?.();
    console.log(await fill(l));
  }
}
