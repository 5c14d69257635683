/**
 * @module The side-by-side's taquba workload one run at a time (runs of
 * N_STEPS no-op steps: `submit`, `wait`, `outcome`) over a LocalStore, for
 * several checkouts in one process, alternating run by run (the order
 * reversed every other round), so the machine's drift hits each alike.
 * Prints per-step latency (run p50 / N_STEPS), the process's CPU per step
 * while each checkout's runs ran, and the main thread's own CPU per step
 * (Linux schedstat).
 *
 * Usage: `npx tsx bench/local-step-ab.ts <checkout> [<checkout> ...]`, each a
 * directory whose `runtime/` is measured; `<checkout>:pool` measures it with
 * `{ putThread: false }` (every LocalStore put on the thread pool). Env: N_RUNS (40 each), N_STEPS (10).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";
import { openStepWorkload, type Taquba } from "./support/step-workload.js";

const N_RUNS = Number(process.env.N_RUNS ?? 40);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const args = process.argv.slice(2);
const checkouts = args.map((c) => resolve(c.replace(/:pool$/, "")));
if (checkouts.length === 0) throw new Error("usage: npx tsx bench/local-step-ab.ts <checkout> [<checkout> ...]");

const subjects: { one(): Promise<void>; close(): Promise<void> }[] = [];
for (const [k, c] of checkouts.entries()) {
  const T = (await import(pathToFileURL(join(c, "runtime/index.ts")).href)) as Taquba;
  const dir = mkdtempSync(join(tmpdir(), "bench-step-ab-"));
  const store = args[k]!.endsWith(":pool") ? new T.LocalStore(dir, { putThread: false }) : new T.LocalStore(dir);
  const workload = await openStepWorkload(T, store, N_STEPS);
  for (let i = 0; i < 5; i++) await workload.one();
  subjects.push({
    one: workload.one,
    close: async () => {
      await workload.close();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}
const lat: number[][] = checkouts.map(() => []);
const cpuUs = checkouts.map(() => 0);
const mainNs = checkouts.map(() => 0);

/** The main thread's CPU time so far, in ns (0 where schedstat is missing). */
function mainThreadNs(): number {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "latin1").split(" ")[0]);
  } catch {
    return 0;
  }
}
console.log(`local-step-ab: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} load ${loadAverageText()}`);
for (let i = 0; i < N_RUNS; i++) {
  const order = i % 2 === 0 ? [...subjects.keys()] : [...subjects.keys()].reverse();
  for (const k of order) {
    const main0 = mainThreadNs();
    const cpu0 = process.cpuUsage();
    const t = performance.now();
    await subjects[k]!.one();
    lat[k]!.push(performance.now() - t);
    const cpu = process.cpuUsage(cpu0);
    cpuUs[k]! += cpu.user + cpu.system;
    mainNs[k]! += mainThreadNs() - main0;
  }
}
args.forEach((c, k) => {
  const xs = lat[k]!.sort((a, b) => a - b);
  console.log(
    `${c}: per-step p50 ${(percentile(xs, 50) / N_STEPS).toFixed(3)} ms, p90 ${(percentile(xs, 90) / N_STEPS).toFixed(3)} ms, CPU ${(cpuUs[k]! / 1000 / (N_RUNS * N_STEPS)).toFixed(3)} ms per step, main thread ${(mainNs[k]! / 1e6 / (N_RUNS * N_STEPS)).toFixed(3)} ms`,
  );
});
console.log(`load at end ${loadAverageText()}`);
for (const s of subjects) await s.close();
