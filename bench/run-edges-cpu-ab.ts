/**
 * @module CPU per run at a run's edges (its submit, its wait, the terminal
 * settlement, the outcome read) of two or more compiled checkouts, measured
 * round by round in one process: runs of one step, whose single step
 * succeeds at once, so a run's CPU is mostly its edges. Rounds alternate the
 * checkouts' order (A B, then B A). Per round and checkout: a fresh
 * MemoryStore workload (`maxConcurrentSteps(64)`, each run submitted, waited
 * for and its outcome read), 50 untimed runs, then N runs with CONC in
 * flight; CPU by `process.cpuUsage` (user + system). At the end, the median
 * of the rounds after the first two (the JIT warms up in those).
 *
 * Run: `npm run build` in each checkout, then
 * `N=2000 CONC=50 ROUNDS=12 npx tsx bench/run-edges-cpu-ab.ts <checkout A> <checkout B>`.
 */
import { median } from "./support/percentile.js";
import { loadCheckout, openStepWorkload, type Taquba } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 2000);
const CONC = env("CONC", 50);
const ROUNDS = env("ROUNDS", 12);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout(d));

/** CPU µs per run of `n` one-step runs with `conc` in flight, on a fresh MemoryStore. */
async function cpuPerRun(T: Taquba): Promise<number> {
  const w = await openStepWorkload(T, new T.MemoryStore(), 1);
  try {
    await w.drive(50, 10);
    const cpu0 = process.cpuUsage();
    await w.drive(N, CONC);
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / N;
  } finally {
    await w.close();
  }
}

console.log(`N=${N} CONC=${CONC} ROUNDS=${ROUNDS} node ${process.version} load ${loadAverageText()}`);
const perRun: number[][] = dirs.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  const order = dirs.map((_, i) => i);
  if (r % 2 === 1) order.reverse();
  const line: string[] = [];
  for (const i of order) {
    const us = await cpuPerRun(mods[i]!);
    perRun[i]!.push(us);
    line.push(`${dirs[i]} ${us.toFixed(1)} µs/run`);
  }
  console.log(`round ${r}: ${line.join(", ")}`);
}
for (let i = 0; i < dirs.length; i++) {
  const kept = perRun[i]!.slice(2);
  const orderOf = (first: boolean) => median(kept.filter((_, j) => ((j + 2) % 2 === 0) === (first === (i === 0))));
  console.log(
    `${dirs[i]}: median ${median(kept).toFixed(1)} µs/run (run first ${orderOf(true).toFixed(1)}, run second ${orderOf(false).toFixed(1)}); rounds ${kept.map((x) => x.toFixed(0)).join(", ")}`,
  );
}
console.log(`load at end ${loadAverageText()}`);
