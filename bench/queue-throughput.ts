/**
 * @module Queue throughput: producers and a worker pool in one process.
 *
 * Each job is one `enqueue` (durable) and one ack through `runWorker`
 * (claim non-durable, ack durable). Reports jobs done per second, the
 * enqueue-to-done latency (enqueue call to the ack being durable), and the
 * store traffic per job, over MemoryStore, a LocalStore directory and a
 * MemoryStore behind 20 ms ± 5 ms of latency.
 *
 * Env: JOBS (default 20000), PRODUCERS (128 concurrent enqueue loops),
 * CONCURRENCY (worker slots, 512), FLUSH_MS (engine flush window, 2),
 * STORES (comma list of memory,local,latency).
 */
import { LocalStore, MemoryStore, Queue, runWorker, withCounting, withLatency, type ObjectStore } from "../runtime/index.js";
import { percentile } from "./support/percentile.js";
import { withTempDir } from "./support/temp-dir.js";

const JOBS = Number(process.env.JOBS ?? 20_000);
const PRODUCERS = Number(process.env.PRODUCERS ?? 128);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 512);
const FLUSH_MS = Number(process.env.FLUSH_MS ?? 2);
const STORES = (process.env.STORES ?? "memory,local,latency").split(",");
const PAYLOAD = new Uint8Array(64).fill(7);

async function run(label: string, inner: ObjectStore): Promise<void> {
  const store = withCounting(inner);
  const queue = await Queue.open(store, "bench", { flushIntervalMs: FLUSH_MS });
  const walBefore = queue.engineStats.walPuts;
  // Opening is not part of the run: count from here.
  const base = { ...store.counts };
  const latencies: number[] = [];
  let doneCount = 0;
  let resolveAll!: () => void;
  const allDone = new Promise<void>((r) => (resolveAll = r));
  const ac = new AbortController();
  const t0 = performance.now();
  const worker = runWorker(queue, "jobs", { process: async () => undefined }, { concurrency: CONCURRENCY, signal: ac.signal });
  let next = 0;
  const producers = Array.from({ length: PRODUCERS }, async () => {
    while (next < JOBS) {
      next++;
      const start = performance.now();
      const { jobId } = await queue.enqueue("jobs", PAYLOAD);
      void queue.waitForCompletion(jobId).then(() => {
        latencies.push(performance.now() - start);
        if (++doneCount === JOBS) resolveAll();
      });
    }
  });
  await Promise.all(producers);
  await allDone;
  const seconds = (performance.now() - t0) / 1000;
  ac.abort();
  await worker;
  const walPuts = queue.engineStats.walPuts - walBefore;
  const c = store.counts;
  const requests = c.gets - base.gets + (c.puts - base.puts) + (c.deletes - base.deletes) + (c.lists - base.lists);
  latencies.sort((a, b) => a - b);
  console.log(
    `| ${label} | ${JOBS} | ${Math.round(JOBS / seconds).toLocaleString("en-US")} | ${percentile(latencies, 50).toFixed(1)} ms | ${percentile(latencies, 99).toFixed(1)} ms | ${(walPuts / JOBS).toFixed(4)} | ${(requests / JOBS).toFixed(4)} | ${((c.bytesIn - base.bytesIn) / JOBS).toFixed(0)} |`,
  );
  await queue.close();
}

console.log(`queue-throughput: jobs=${JOBS} producers=${PRODUCERS} concurrency=${CONCURRENCY} flushMs=${FLUSH_MS} payload=64 B`);
console.log("| store | jobs | done/s | enqueue→done p50 | p99 | WAL puts/job | store requests/job | bytes put/job |");
console.log("|---|---|---|---|---|---|---|---|");
for (const s of STORES) {
  if (s === "memory") await run("MemoryStore", new MemoryStore());
  else if (s === "local") {
    await withTempDir("taquba-bench-", (dir) => run("LocalStore (tmp dir)", new LocalStore(dir)));
  } else if (s === "latency") await run("withLatency(memory, 20±5 ms)", withLatency(new MemoryStore(), { ms: 20, jitterMs: 5 }));
}
