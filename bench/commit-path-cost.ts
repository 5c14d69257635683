/**
 * @module The engine's commit alone, with the ops a continuing workflow step
 * commits, for one or more compiled checkouts: no queue, no workflow, so a
 * short run under `valgrind --tool=callgrind` counts the commit path's
 * instructions and nothing else moves them.
 *
 * Each checkout opens an engine over a MemoryStore with the queue's paging
 * (`pageValues` over job records), fills it with the keys of K finished
 * runs (a run record, a step pointer and ten history entries each), then runs
 * N commits, CONC at a time in one turn, then awaits them (the group commit
 * of a busy queue). Each commit is a step's settlement as the side by side
 * makes it (bench/step-key-ops.ts): the next job's record (180 B) and claim
 * marker written, the acked job's record and marker deleted, a history entry
 * (60 B) added, the run's step pointer (40 B) and the queue's counters (8 B)
 * written over. Commits go through `commitOwned`, as the queue's do.
 * Prints CPU µs per commit (`process.cpuUsage`) per round, the checkpoints
 * the commits brought included.
 *
 * Run: `npm run build` in each checkout, then
 * `N=20000 ROUNDS=5 npx tsx bench/commit-path-cost.ts <checkout A> <checkout B>`; instructions per
 * commit: the bundle (`npx esbuild bench/commit-path-cost.ts --bundle --packages=external
 * --platform=node --format=esm --outfile=<file>.mjs`) under
 * `N=<n> ROUNDS=1 valgrind --tool=callgrind --callgrind-out-file=<out> node <file>.mjs <checkout>`
 * at two values of n: the difference over the difference in n.
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

type EngineModule = typeof import("../runtime/engine/engine.js");
type BatchModule = typeof import("../runtime/engine/write-batch.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 20_000);
const K = env("K", 2_000);
const CONC = env("CONC", 50);
const ROUNDS = env("ROUNDS", 5);
for (const [name, v] of Object.entries({ N, K, CONC, ROUNDS })) {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer, got ${v}`);
}
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");

interface Checkout {
  dir: string;
  T: Taquba;
  E: EngineModule;
  B: BatchModule;
}
const checkouts: Checkout[] = [];
for (const dir of dirs) {
  checkouts.push({
    dir,
    T: await loadCheckout<Taquba>(dir),
    E: await loadCheckout<EngineModule>(dir, "dist/runtime/engine/engine.js"),
    B: await loadCheckout<BatchModule>(dir, "dist/runtime/engine/write-batch.js"),
  });
}

const RUN = "u/workflow/runs/workflow-steps/";
const HISTORY = "u/workflow/history/workflow-steps/";
const STEP = "u/workflow/steps/workflow-steps/";
const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(10, "0")}`;
const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);

async function round(c: Checkout, n: number): Promise<number> {
  const engine = await c.E.Engine.open(new c.T.MemoryStore(), { pageValues: { keyPrefixes: ["j/"] } });
  const noGiven: number[] = [];
  let next = 0;
  // The finished runs the queue keeps: their history, step pointer, outcome and run record.
  for (let r = 0; r < K; r++) {
    const b = new c.B.WriteBatch();
    const run = id(next++);
    b.put(RUN + run, bytes(120, 1)).put(STEP + run, bytes(40, 2));
    for (let s = 0; s < 10; s++) b.put(`${HISTORY}${run}/${s}`, bytes(60, 3));
    await engine.commit(b);
  }
  // CONC runs in flight, each with its current job.
  const runs: string[] = [];
  const jobs: string[] = [];
  const steps: number[] = [];
  for (let r = 0; r < CONC; r++) {
    runs.push(id(next++));
    jobs.push(id(next++));
    steps.push(0);
    const b = new c.B.WriteBatch();
    b.put(RUN + runs[r]!, bytes(120, 1))
      .put(`j/${jobs[r]}`, bytes(180, 4))
      .put(`c/${jobs[r]}`, bytes(8, 5));
    await engine.commit(b);
  }
  const commitOne = (r: number): Promise<void> => {
    const run = runs[r]!;
    const old = jobs[r]!;
    const job = id(next++);
    jobs[r] = job;
    const s = steps[r]!++;
    const b = new c.B.WriteBatch();
    b.put(`j/${job}`, bytes(180, 4))
      .put(`c/${job}`, bytes(8, 5))
      .delete(`c/${old}`)
      .delete(`j/${old}`)
      .put(`${HISTORY}${run}/${s}`, bytes(60, 3))
      .put(STEP + run, bytes(40, s & 0xff))
      .put("n/workflow-steps", bytes(8, s & 0xff));
    return c.E.commitOwned(engine, b.ops, noGiven, {});
  };
  const cpu0 = process.cpuUsage();
  for (let done = 0; done < n; ) {
    const wave: Promise<void>[] = [];
    for (let r = 0; r < CONC && done < n; r++, done++) wave.push(commitOne(r));
    await Promise.all(wave);
  }
  const cpu = process.cpuUsage(cpu0);
  await engine.close();
  return (cpu.user + cpu.system) / n;
}

console.log(`N=${N} K=${K} CONC=${CONC} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const results = new Map<string, number[]>();
for (let r = 1; r <= ROUNDS; r++) {
  for (const c of checkouts) {
    const cpu = await round(c, N);
    console.log(`round ${r} ${c.dir}: ${cpu.toFixed(2)} µs per commit`);
    if (r > 1) results.set(c.dir, [...(results.get(c.dir) ?? []), cpu]);
  }
}
for (const [dir, cpus] of results) {
  const sorted = [...cpus].sort((a, b) => a - b);
  console.log(`${dir}: median ${sorted[sorted.length >> 1]!.toFixed(2)} µs per commit over rounds 2-${ROUNDS}`);
}
console.log(`load at end ${loadAverageText()}`);
