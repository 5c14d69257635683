/**
 * @module Queue cold start: reopen a store holding HISTORY (default 20000)
 * finished jobs (kept as done records) and LIVE (default 100) pending jobs,
 * then claim the first job. Reports the open time and the first-claim
 * latency over a LocalStore directory and a MemoryStore behind 20 ms ± 5 ms.
 */
import { LocalStore, MemoryStore, Queue, withCounting, withLatency, type ObjectStore } from "../runtime/index.js";
import { withTempDir } from "./support/temp-dir.js";

const HISTORY = Number(process.env.HISTORY ?? 20_000);
const LIVE = Number(process.env.LIVE ?? 100);
const PAYLOAD = new Uint8Array(64).fill(2);
const opts = { flushIntervalMs: 2, queueConfigs: { jobs: { doneRetentionMs: 24 * 3600 * 1000 } } };

async function prepare(store: ObjectStore): Promise<void> {
  const q = await Queue.open(store, "cold", opts);
  for (let i = 0; i < HISTORY; i += 500) {
    await q.enqueueBatch(Array.from({ length: Math.min(500, HISTORY - i) }, () => ({ queueName: "jobs", payload: PAYLOAD })));
    const jobs = await q.claimBatch("jobs", 500);
    await Promise.all(jobs.map((j) => q.ack(j)));
  }
  await q.enqueueBatch(Array.from({ length: LIVE }, () => ({ queueName: "jobs", payload: PAYLOAD })));
  await q.close();
}

async function measure(label: string, store: ObjectStore, slow: ObjectStore): Promise<void> {
  await prepare(store);
  const counting = withCounting(slow);
  const t0 = performance.now();
  const q = await Queue.open(counting, "cold", opts);
  const opened = performance.now();
  const job = await q.claim("jobs");
  const claimed = performance.now();
  const stats = await q.view().stats("jobs");
  if (job === null || stats.done !== HISTORY) throw new Error(`unexpected state after reopen: ${JSON.stringify(stats)}`);
  const c = counting.counts;
  console.log(
    `| ${label} | ${(opened - t0).toFixed(0)} ms | ${(claimed - opened).toFixed(2)} ms | ${c.gets} gets, ${c.lists} lists, ${c.puts} puts | ${(c.bytesOut / 1024).toFixed(0)} KiB read |`,
  );
  await q.close();
}

console.log(`queue-cold-start: history=${HISTORY} done jobs (retained), live=${LIVE} pending, payload=64 B`);
console.log("| store | open (incl. recovery) | first claim | requests during open | bytes |");
console.log("|---|---|---|---|---|");
await withTempDir("taquba-cold-", async (dir) => {
  const local = new LocalStore(dir);
  await measure("LocalStore (tmp dir)", local, local);
});
const mem = new MemoryStore();
await measure("withLatency(memory, 20±5 ms)", mem, withLatency(mem, { ms: 20, jitterMs: 5 }));
