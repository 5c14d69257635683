/**
 * @module CPU per workflow step of two or more compiled checkouts, measured
 * round by round in one process, so every checkout runs under the same load
 * (on a shared machine CPU time moves by 20 % between separate runs).
 *
 * Each argument is a checkout built with `npm run build` (its `dist/` is
 * loaded). Workload per round and checkout: the side-by-side peer workload
 * on a fresh MemoryStore (10-step runs whose runner continues at once,
 * `maxConcurrentSteps(64)`, each run submitted, waited for and its outcome
 * read): 20 untimed runs, then N runs with CONC in flight, then NL runs one
 * at a time. Reported per round: CPU µs per step (`process.cpuUsage`, user +
 * system, over the timed runs), steps/s, engine commits, store requests and
 * bytes put per step; at the end the median of the rounds after the first
 * two (the JIT warms up in those).
 *
 * Run: `npm run build` in each checkout, then
 * `N=300 NL=30 ROUNDS=10 npx tsx bench/step-cpu-ab.ts <checkout A> <checkout B>`.
 */
import { median, percentile } from "./support/percentile.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const NL = env("NL", 30);
const CONC = env("CONC", 50);
const ROUNDS = env("ROUNDS", 10);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout(d));

interface Round {
  cpu: number;
  stepsPerSec: number;
  p50: number;
  commits: number;
  requests: number;
  bytes: number;
}

async function measure(T: Taquba, n: number, conc: number): Promise<Round> {
  const store = T.withCounting(new T.MemoryStore());
  const w = await openStepWorkload(T, store);
  const queue = w.queue;
  try {
    await w.drive(20, 10);
    store.reset();
    const batches0 = queue.engineStats.walBatches;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const lat = await w.drive(n, conc);
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const c = store.counts;
    const steps = n * M;
    return {
      cpu: (cpu.user + cpu.system) / steps,
      stepsPerSec: steps / (wall / 1000),
      p50: percentile(lat, 50) / M,
      commits: (queue.engineStats.walBatches - batches0) / steps,
      requests: (c.puts + c.gets + c.deletes + c.lists) / steps,
      bytes: c.bytesIn / steps,
    };
  } finally {
    await w.close();
  }
}

console.log(`N=${N} NL=${NL} CONC=${CONC} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const results = dirs.map(() => ({ tp: [] as Round[], one: [] as Round[] }));
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < dirs.length; i++) {
    const tp = await measure(mods[i]!, N, CONC);
    const one = NL > 0 ? await measure(mods[i]!, NL, 1) : undefined;
    results[i]!.tp.push(tp);
    if (one !== undefined) results[i]!.one.push(one);
    console.log(
      `round ${r} ${dirs[i]}: ${CONC} in flight ${tp.cpu.toFixed(0)} µs/step, ${tp.stepsPerSec.toFixed(0)} steps/s, ${tp.commits.toFixed(3)} commits, ${tp.requests.toFixed(3)} requests, ${tp.bytes.toFixed(0)} bytes put` +
        (one === undefined
          ? ""
          : ` | one at a time ${one.cpu.toFixed(0)} µs/step, p50 ${one.p50.toFixed(3)} ms, ${one.commits.toFixed(3)} commits, ${one.requests.toFixed(3)} requests`),
    );
  }
}
for (let i = 0; i < dirs.length; i++) {
  const tp = results[i]!.tp.slice(2);
  const one = results[i]!.one.slice(2);
  console.log(
    `${dirs[i]}: ${CONC} in flight ${tp.map((x) => x.cpu.toFixed(0)).join(", ")} (median ${median(tp.map((x) => x.cpu)).toFixed(0)} µs/step)` +
      (one.length === 0
        ? ""
        : `; one at a time ${one.map((x) => x.cpu.toFixed(0)).join(", ")} (median ${median(one.map((x) => x.cpu)).toFixed(0)} µs/step, p50 ${median(one.map((x) => x.p50)).toFixed(3)} ms)`),
  );
}
console.log(`load at end ${loadAverageText()}`);
