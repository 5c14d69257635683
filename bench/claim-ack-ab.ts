/**
 * @module CPU per job of a plain queue's claims and acks (no workflow), for
 * two or more built checkouts alternating round by round: what a claim's
 * read of its job record and the lease registry cost where every job is
 * claimed by `claimBatch`, not chained.
 *
 * Each round and checkout: a fresh MemoryStore queue filled with JOBS jobs
 * of a 64-byte payload and three headers (untimed), then drained by
 * claims of BATCH jobs, each batch acked before the next claim (timed:
 * `process.cpuUsage`, user + system, per job). Medians of the rounds after
 * the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `JOBS=20000 BATCH=50 ROUNDS=12 npx tsx bench/claim-ack-ab.ts <A> <B>`.
 */
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const JOBS = env("JOBS", 20_000);
const BATCH = env("BATCH", 50);
const ROUNDS = env("ROUNDS", 12);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout(d));

const payload = new Uint8Array(64).fill(7);
const headers = { tenant: "acme", region: "eu-west-1", "trace.id": "4bf92f3577b34da6a3ce929d0e0e4736" };

console.log(`JOBS=${JOBS} BATCH=${BATCH} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const figures = await alternateRounds(dirs, ROUNDS, async (i) => {
  const T = mods[i]!;
  const queue = await T.Queue.open(new T.MemoryStore(), "bench");
  try {
    for (let n = 0; n < JOBS; n += 500) {
      await queue.enqueueBatch(Array.from({ length: Math.min(500, JOBS - n) }, () => ({ queueName: "jobs", payload, opts: { headers } })));
    }
    const cpu0 = process.cpuUsage();
    let done = 0;
    while (done < JOBS) {
      const jobs = await queue.claimBatch("jobs", BATCH);
      if (jobs.length === 0) throw new Error(`the queue ran dry after ${done} of ${JOBS} jobs`);
      await Promise.all(jobs.map((j) => queue.ack(j)));
      done += jobs.length;
    }
    const cpu = process.cpuUsage(cpu0);
    return ((cpu.user + cpu.system) * 1000) / JOBS;
  } finally {
    await queue.close();
  }
});
printMedians(dirs, figures, "ns of CPU per job claimed and acked");
console.log(`load at end ${loadAverageText()}`);
