/**
 * @module The side-by-side's taquba workload one run at a time (runs of
 * N_STEPS no-op steps: `submit`, `wait`, `outcome`) over a LocalStore, for
 * several checkouts in one process, alternating run by run (the order
 * reversed every other round), so the machine's drift hits each alike.
 * Prints per-step latency (run p50 / N_STEPS) and the process's CPU per step
 * while each checkout's runs ran.
 *
 * Usage: `npx tsx bench/local-step-ab.ts <checkout> [<checkout> ...]`, each a
 * directory whose `runtime/` is measured. Env: N_RUNS (40 each), N_STEPS (10).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";
import { openStepWorkload, type Taquba } from "./support/step-workload.js";

const N_RUNS = Number(process.env.N_RUNS ?? 40);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const checkouts = process.argv.slice(2).map((c) => resolve(c));
if (checkouts.length === 0) throw new Error("usage: npx tsx bench/local-step-ab.ts <checkout> [<checkout> ...]");

const subjects: { one(): Promise<void>; close(): Promise<void> }[] = [];
for (const c of checkouts) {
  const T = (await import(pathToFileURL(join(c, "runtime/index.ts")).href)) as Taquba;
  const dir = mkdtempSync(join(tmpdir(), "bench-step-ab-"));
  const workload = await openStepWorkload(T, new T.LocalStore(dir), N_STEPS);
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
console.log(`local-step-ab: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} load ${loadAverageText()}`);
for (let i = 0; i < N_RUNS; i++) {
  const order = i % 2 === 0 ? [...subjects.keys()] : [...subjects.keys()].reverse();
  for (const k of order) {
    const cpu0 = process.cpuUsage();
    const t = performance.now();
    await subjects[k]!.one();
    lat[k]!.push(performance.now() - t);
    const cpu = process.cpuUsage(cpu0);
    cpuUs[k]! += cpu.user + cpu.system;
  }
}
checkouts.forEach((c, k) => {
  const xs = lat[k]!.sort((a, b) => a - b);
  console.log(
    `${c}: per-step p50 ${(percentile(xs, 50) / N_STEPS).toFixed(3)} ms, p90 ${(percentile(xs, 90) / N_STEPS).toFixed(3)} ms, CPU ${(cpuUs[k]! / 1000 / (N_RUNS * N_STEPS)).toFixed(3)} ms per step`,
  );
});
console.log(`load at end ${loadAverageText()}`);
for (const s of subjects) await s.close();
