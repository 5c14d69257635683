/**
 * @module One checkout's one-step runs (as bench/run-edges-cpu-ab.ts runs
 * them: submit, wait, outcome, MemoryStore, 50 in flight), N of them after
 * 50 untimed, in a process of its own: for instruction counts under
 * callgrind, which a loaded machine leaves as they are. Run it at two N per
 * checkout; the difference of the counts over the difference of N is the
 * instructions per run, the start-up and the JIT's warm-up taken out.
 *
 * Run: `npm run build` in each checkout, bundle this file
 * (`npx esbuild bench/run-edges-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/run-edges-instructions.mjs`),
 * then for N=1000 and N=3000 and each checkout
 * `N=1000 valgrind --tool=callgrind --callgrind-out-file=<file> node bench/.out/run-edges-instructions.mjs <checkout>`
 * and read the total (`callgrind_annotate <file> | head -20`, "PROGRAM TOTALS").
 */
import { loadCheckout, openStepWorkload } from "./support/step-workload.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const N = Number(process.env.N ?? 1000);
const T = await loadCheckout(dir);
const w = await openStepWorkload(T, new T.MemoryStore(), 1);
try {
  await w.drive(50, 10);
  const cpu0 = process.cpuUsage();
  await w.drive(N, 50);
  const cpu = process.cpuUsage(cpu0);
  console.log(`${dir}: N=${N} ${((cpu.user + cpu.system) / N).toFixed(1)} µs/run`);
} finally {
  await w.close();
}
