/**
 * @module Public enqueue throughput of two or more compiled checkouts,
 * alternating round by round in one process: `Queue.enqueue` with `CONC`
 * calls in flight, and `enqueueBatch` of `BATCH` items with `CONC / BATCH`
 * batches in flight, over a `MemoryStore` (so the store's IO is not what
 * is measured). Each job has the options a caller typically gives: a
 * priority, attempts, two headers, and every fourth one a dedup key. Each
 * round opens a fresh queue per checkout and enqueues `JOBS` jobs each way.
 * Prints per round and checkout jobs per second (wall) and CPU per job
 * (`process.cpuUsage`, user + system, which includes the engine's commit
 * work in the same process), then the medians of the rounds after the
 * first two, with the load average beside each round.
 *
 * Run: `npm run build` in each checkout, then
 * `JOBS=50000 ROUNDS=8 npx tsx bench/enqueue-public-ab.ts <checkout A> <checkout B>`.
 */
import { median } from "./support/percentile.js";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout } from "./support/step-workload.js";

type Taquba = typeof import("../runtime/index.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const JOBS = env("JOBS", 50_000);
const ROUNDS = env("ROUNDS", 8);
const CONC = env("CONC", 500);
const BATCH = env("BATCH", 100);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout<Taquba>(d));

const payload = new Uint8Array(64).fill(7);

/** The options of job `i`: a caller's typical ones, a fresh object each (as a caller builds them). */
function optionsOf(i: number) {
  return i % 4 === 0
    ? { priority: 100, maxAttempts: 5, headers: { tenant: "acme", region: "eu" }, dedupKey: `order-${i}` }
    : { priority: 100, maxAttempts: 5, headers: { tenant: "acme", region: "eu" } };
}

interface Figures {
  jobsPerSec: number;
  cpuNsPerJob: number;
}

async function measure(t: Taquba, way: "enqueue" | "batch"): Promise<Figures> {
  const queue = await t.Queue.open(new t.MemoryStore(), "bench", { flushIntervalMs: 1 });
  try {
    const wall0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    if (way === "enqueue") {
      for (let i = 0; i < JOBS; i += CONC) {
        const calls: Promise<unknown>[] = [];
        for (let j = i; j < Math.min(JOBS, i + CONC); j++) calls.push(queue.enqueue("jobs", payload, optionsOf(j)));
        await Promise.all(calls);
      }
    } else {
      for (let i = 0; i < JOBS; i += CONC) {
        const calls: Promise<unknown>[] = [];
        for (let b = i; b < Math.min(JOBS, i + CONC); b += BATCH) {
          const items = [];
          for (let j = b; j < Math.min(JOBS, b + BATCH); j++) items.push({ queueName: "jobs", payload, opts: optionsOf(j) });
          calls.push(queue.enqueueBatch(items));
        }
        await Promise.all(calls);
      }
    }
    const cpu = process.cpuUsage(cpu0);
    const wallNs = Number(process.hrtime.bigint() - wall0);
    return { jobsPerSec: (JOBS * 1e9) / wallNs, cpuNsPerJob: ((cpu.user + cpu.system) * 1000) / JOBS };
  } finally {
    await queue.close();
  }
}

console.log(`public enqueue A/B; JOBS=${JOBS} ROUNDS=${ROUNDS} CONC=${CONC} BATCH=${BATCH}; checkouts: ${dirs.join(", ")}`);
const ways = ["enqueue", "batch"] as const;
const results = new Map<string, Figures[]>();
for (let r = 0; r < ROUNDS; r++) {
  // Both orders: A first in even rounds, B first in odd ones.
  const order = r % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
  const line: string[] = [];
  for (const way of ways) {
    for (const i of order) {
      const f = await measure(mods[i]!, way);
      const key = `${way} ${dirs[i]}`;
      results.set(key, [...(results.get(key) ?? []), f]);
      line.push(`${key}: ${f.jobsPerSec.toFixed(0)}/s ${f.cpuNsPerJob.toFixed(0)} ns CPU`);
    }
  }
  console.log(`round ${r + 1} (load ${loadAverageText()}): ${line.join("; ")}`);
}
for (const [key, fs] of results) {
  const kept = fs.slice(2);
  console.log(
    `median after 2 rounds, ${key}: ${median(kept.map((f) => f.jobsPerSec)).toFixed(0)} jobs/s, ${median(kept.map((f) => f.cpuNsPerJob)).toFixed(0)} ns CPU per job`,
  );
}
