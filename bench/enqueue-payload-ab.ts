/**
 * @module CPU per `Queue.enqueue` by payload size, for two or more built
 * checkouts alternating round by round in one process: what taking the
 * payload as the call saw it costs (a copy, a check, or neither).
 *
 * Each round, size and checkout: a fresh MemoryStore queue, then JOBS
 * enqueues (JOBS_LARGE for the large size) of one plain `Uint8Array`
 * payload, not changed, with CONC calls in flight, timed by
 * `process.cpuUsage` (user + system, which includes the engine's commit in
 * the same process). Medians of the rounds after the first two. The large
 * size stays under the default offload threshold: stored inline.
 *
 * Run: `npm run build` in each checkout, then
 * `JOBS=20000 JOBS_LARGE=2000 ROUNDS=12 node --expose-gc --import tsx bench/enqueue-payload-ab.ts <A> <B>`
 * (with `--expose-gc`, each measure starts after a full collection).
 */
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const JOBS = env("JOBS", 20_000);
const JOBS_LARGE = env("JOBS_LARGE", 2_000);
const ROUNDS = env("ROUNDS", 10);
const CONC = env("CONC", 100);
const SIZES = [64, 64 * 1024];

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout(d));

async function cpuPerEnqueue(t: Taquba, size: number, jobs: number): Promise<number> {
  const payload = new Uint8Array(size).fill(7);
  // The previous measure's garbage collected first, so the checkout measured second does not pay for it.
  (globalThis as { gc?: () => void }).gc?.();
  const queue = await t.Queue.open(new t.MemoryStore(), "bench", { flushIntervalMs: 1 });
  try {
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < jobs; i += CONC) {
      const calls: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(jobs, i + CONC); j++) calls.push(queue.enqueue("jobs", payload));
      await Promise.all(calls);
    }
    const cpu = process.cpuUsage(cpu0);
    return ((cpu.user + cpu.system) * 1000) / jobs;
  } finally {
    await queue.close();
  }
}

console.log(`JOBS=${JOBS} JOBS_LARGE=${JOBS_LARGE} ROUNDS=${ROUNDS} CONC=${CONC} load ${loadAverageText()}; node ${process.version}`);
for (const size of SIZES) {
  const jobs = size > 1024 ? JOBS_LARGE : JOBS;
  console.log(`payload ${size} B, ${jobs} enqueues per round`);
  const figures = await alternateRounds(dirs, ROUNDS, (i) => cpuPerEnqueue(mods[i]!, size, jobs));
  printMedians(dirs, figures, `ns of CPU per enqueue of ${size} B`);
}
console.log(`load at end ${loadAverageText()}`);
