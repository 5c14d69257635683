/**
 * @module One checkout's side-by-side steps (10-step runs whose runner
 * continues at once, submit, wait and outcome included, MemoryStore, 50 in
 * flight; bench/support/step-workload.ts), N runs after 50 untimed, in a
 * process of its own: for instruction counts under callgrind, which a
 * loaded machine leaves as they are. Run it at two N per checkout; the
 * difference of the counts over the difference of N times 10 is the
 * instructions per step, the start-up and the JIT's warm-up taken out.
 *
 * Steps hold a lease of LEASE_MS (default an hour): under callgrind a step
 * takes tens of seconds of wall time on a loaded machine, and with the
 * default lease some expired, so their steps ran twice and the counts
 * carried the redeliveries (a "claim is no longer held" in the output).
 *
 * Run: `npm run build` in each checkout, bundle this file
 * (`npx esbuild bench/step-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/step-instructions.mjs`),
 * then for N=100 and N=300 and each checkout
 * `N=100 valgrind --tool=callgrind --callgrind-out-file=<file> node --single-threaded --no-concurrent-recompilation bench/.out/step-instructions.mjs <checkout>`
 * and read the total (`callgrind_annotate <file> | head -20`, "PROGRAM TOTALS").
 *
 * Or one run per checkout with the warm-up uninstrumented: WARM runs
 * (default 50) before a measured window of N runs, through
 * bench/callgrind-gated.ts, which prints the window's instructions per step:
 * `N=60 WARM=100 npx tsx bench/callgrind-gated.ts <out.cg> node --single-threaded --no-concurrent-recompilation bench/.out/step-instructions.mjs <checkout>`.
 */
import { gateClose, gateOpen } from "./support/callgrind-gate.js";
import { chainRunner, loadCheckout, STEPS_PER_RUN, workloadOf } from "./support/step-workload.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const N = Number(process.env.N ?? 300);
const WARM = Number(process.env.WARM ?? 50);
const LEASE_MS = Number(process.env.LEASE_MS ?? 3_600_000);
const T = await loadCheckout(dir);
const store = new T.MemoryStore();
const queue = await T.Queue.open(store, "bench");
// The workload's runtime (see `runtimeWorkload`), with the long lease.
const runtime = T.WorkflowRuntime.builder(queue, store, chainRunner(T), T.NoopTerminalHook).maxConcurrentSteps(64).leaseMs(LEASE_MS).build();
const input = new TextEncoder().encode(`0/${STEPS_PER_RUN}`);
const w = workloadOf(queue, runtime.spawn(), async () => {
  const { runId } = await runtime.submit({ input });
  await runtime.wait(runId);
  const o = await runtime.outcome(runId);
  if (o?.status !== "succeeded") throw new Error(`run ${runId} did not succeed`);
});
try {
  await w.drive(WARM, 10);
  await gateOpen();
  const cpu0 = process.cpuUsage();
  await w.drive(N, 50);
  const cpu = process.cpuUsage(cpu0);
  await gateClose(N * STEPS_PER_RUN);
  console.log(`${dir}: N=${N} WARM=${WARM} LEASE_MS=${LEASE_MS} ${((cpu.user + cpu.system) / (N * STEPS_PER_RUN)).toFixed(1)} µs/step`);
} finally {
  await w.close();
}
