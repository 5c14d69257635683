/**
 * @module One checkout's side-by-side steps (10-step runs whose runner
 * continues at once, submit, wait and outcome included, MemoryStore, 50 in
 * flight; bench/support/step-workload.ts), N runs after 50 untimed, in a
 * process of its own: for instruction counts under callgrind, which a
 * loaded machine leaves as they are. Run it at two N per checkout; the
 * difference of the counts over the difference of N times 10 is the
 * instructions per step, the start-up and the JIT's warm-up taken out.
 *
 * Run: `npm run build` in each checkout, bundle this file
 * (`npx esbuild bench/step-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/step-instructions.mjs`),
 * then for N=300 and N=900 and each checkout
 * `N=300 valgrind --tool=callgrind --callgrind-out-file=<file> node bench/.out/step-instructions.mjs <checkout>`
 * and read the total (`callgrind_annotate <file> | head -20`, "PROGRAM TOTALS").
 */
import { loadCheckout, openStepWorkload, STEPS_PER_RUN } from "./support/step-workload.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const N = Number(process.env.N ?? 300);
const T = await loadCheckout(dir);
const w = await openStepWorkload(T, new T.MemoryStore());
try {
  await w.drive(50, 10);
  const cpu0 = process.cpuUsage();
  await w.drive(N, 50);
  const cpu = process.cpuUsage(cpu0);
  console.log(`${dir}: N=${N} ${((cpu.user + cpu.system) / (N * STEPS_PER_RUN)).toFixed(1)} µs/step`);
} finally {
  await w.close();
}
