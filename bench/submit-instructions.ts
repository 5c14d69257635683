/**
 * @module Instructions per submit, per wait and per outcome in the
 * side-by-side shape (10-step runs whose runner continues at once,
 * MemoryStore, `maxConcurrentSteps(64)`, 50 runs in flight; see
 * bench/support/step-workload.ts), over a built checkout, in a process of
 * its own for callgrind. The counts still move from run to run (the WAL's
 * flush window, timers, the collector and the JIT run on time, and
 * callgrind's slowness changes when): take several runs per tree and a
 * wide N range before reading a difference of a few percent.
 *
 * `PART` picks what each run does after its submit, so a part's cost is the
 * difference of two parts' counts at the same N:
 * - `all`: `wait`, then `outcome` (the workload);
 * - `wait`: `wait` only (all - wait = the outcome);
 * - `end`: the run's end awaited through the terminal hook's `observes`,
 *   which every part installs (wait - end = the wait);
 * - `submit`: submits only, no worker running, 50 at a time (its
 *   difference between two N is the submits alone; the steps never run).
 * Run each part at two N (300 and 900): the difference of the counts over
 * the difference of N is the part's instructions per run, start-up taken
 * out. The JIT's warm-up is not, unless `WARMUP` (uncounted runs first,
 * default 50) is large: at 50, the optimizing compiler's own instructions
 * were half of the submit's difference between N=200 and N=800 (see
 * bench/callgrind-parts.ts, which splits a count by what ran).
 *
 * Run: `npm run build` in each checkout, bundle this file
 * (`npx esbuild bench/submit-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/submit-instructions.mjs`),
 * then for each checkout, part and N
 * `PART=all N=300 valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --no-concurrent-recompilation bench/.out/submit-instructions.mjs <checkout> 2>&1 | grep Collected`
 * (or `bash bench/submit-instructions.sh <checkout>...`, which runs them all and prints the per-run figures).
 */
import { loadCheckout, workloadOf, chainRunner, STEPS_PER_RUN } from "./support/step-workload.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const N = Number(process.env.N ?? 300);
const PART = process.env.PART ?? "all";
// Uncounted runs before the two N's, so the JIT's warm-up (the optimizing compiler was half of the difference at 50 of them) leaves the difference.
const WARMUP = Number(process.env.WARMUP ?? 50);
// Steps per run: the wait's and the outcome's cost do not depend on it, and a 1-step run takes far less time under callgrind.
const STEPS = Number(process.env.STEPS ?? STEPS_PER_RUN);
if (!["all", "wait", "end", "submit"].includes(PART)) throw new Error(`PART must be all, wait, end or submit, got ${PART}`);
const T = await loadCheckout(dir);
const store = new T.MemoryStore();
const queue = await T.Queue.open(store, "bench");
// The end of each run, resolved by the hook's `observes` (called once per termination); the hook observes nothing.
// A run that ends before its entry is made (not expected: ten steps take many turns) is kept in `ended`.
const ends = new Map<string, () => void>();
const ended = new Set<string>();
const hook = {
  observes(outcome: { runId: string }): boolean {
    const end = ends.get(outcome.runId);
    if (end === undefined) ended.add(outcome.runId);
    else {
      ends.delete(outcome.runId);
      end();
    }
    return false;
  },
  async onTermination(): Promise<void> {},
};
const runtime = T.WorkflowRuntime.builder(queue, store, chainRunner(T), hook).maxConcurrentSteps(64).build();
const input = new TextEncoder().encode(`0/${STEPS}`);
const one = async () => {
  const { runId } = await runtime.submit({ input });
  if (PART === "submit") return;
  if (PART === "end") {
    if (!ended.delete(runId)) await new Promise<void>((resolve) => ends.set(runId, resolve));
    return;
  }
  // The hook's entry is made in every part that runs steps, so its cost leaves the differences.
  if (!ended.delete(runId)) ends.set(runId, () => undefined);
  await runtime.wait(runId);
  if (PART === "wait") return;
  const o = await runtime.outcome(runId);
  if (o?.status !== "succeeded") throw new Error(`run ${runId} did not succeed`);
};
const w = workloadOf(queue, PART === "submit" ? { shutdown: async () => undefined } : runtime.spawn(), one);
try {
  // Warm-up as the step benches do; its runs are not counted by the difference of two N.
  await w.drive(WARMUP, Math.min(10, WARMUP));
  const cpu0 = process.cpuUsage();
  await w.drive(N, 50);
  const cpu = process.cpuUsage(cpu0);
  console.log(`${dir}: PART=${PART} STEPS=${STEPS} WARMUP=${WARMUP} N=${N} ${((cpu.user + cpu.system) / N).toFixed(1)} µs/run`);
} finally {
  await w.close();
}
