/**
 * @module Queue drain: claim latency across a large backlog.
 *
 * Enqueues JOBS (default 100000) jobs of 64 B in batches, then drains them
 * with DRAINERS (default 32) concurrent claim→ack loops. Before that, WARMUP
 * jobs (default 2000) go through the same enqueue, claim and ack code, so
 * the first tenth measures claims rather than the JIT compiling them. Each claim's
 * latency is recorded; the figures per tenth of the drain show whether the
 * claim cost stays flat from the first claim to the last.
 *
 * Context printed with the table, to tell the causes of slow claims apart:
 * engine checkpoints during the drain, garbage-collection pauses, and (on
 * Linux) how long the main thread sat runnable but not running because the
 * machine's cores were busy with other processes.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { PerformanceObserver } from "node:perf_hooks";
import { MemoryStore, Queue, withLatency, type ObjectStore } from "../runtime/index.js";
import { percentile } from "./support/percentile.js";

const JOBS = Number(process.env.JOBS ?? 100_000);
const DRAINERS = Number(process.env.DRAINERS ?? 32);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 0);
const WARMUP = Number(process.env.WARMUP ?? 2000);
const PAYLOAD = new Uint8Array(64).fill(1);

const inner: ObjectStore = LATENCY_MS > 0 ? withLatency(new MemoryStore(), { ms: LATENCY_MS, jitterMs: LATENCY_MS / 4 }) : new MemoryStore();
const queue = await Queue.open(inner, "drain", { flushIntervalMs: 2 });
for (let i = 0; i < WARMUP; i += 1000) {
  await queue.enqueueBatch(Array.from({ length: Math.min(1000, WARMUP - i) }, () => ({ queueName: "jobs", payload: PAYLOAD })));
}
await Promise.all(
  Array.from({ length: DRAINERS }, async () => {
    for (let job = await queue.claim("jobs"); job !== null; job = await queue.claim("jobs")) await queue.ack(job);
  }),
);
const tFill = performance.now();
for (let i = 0; i < JOBS; i += 1000) {
  const n = Math.min(1000, JOBS - i);
  await queue.enqueueBatch(Array.from({ length: n }, () => ({ queueName: "jobs", payload: PAYLOAD })));
}
const fillS = (performance.now() - tFill) / 1000;
/** Main-thread CPU time and run-queue wait so far, in ms (Linux schedstat), or undefined elsewhere. */
function schedstat(): { cpu: number; wait: number } | undefined {
  try {
    const [cpu, wait] = readFileSync("/proc/thread-self/schedstat", "latin1").split(" ");
    return { cpu: Number(cpu) / 1e6, wait: Number(wait) / 1e6 };
  } catch {
    return undefined;
  }
}

const gc = { count: 0, ms: 0, maxMs: 0 };
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.count++;
    gc.ms += e.duration;
    gc.maxMs = Math.max(gc.maxMs, e.duration);
  }
});
const claimMs: number[] = new Array(JOBS);
let order = 0;
const before = { stats: queue.engineStats, sched: schedstat(), load: loadavg()[0]! };
gcObserver.observe({ entryTypes: ["gc"] });
const t0 = performance.now();
await Promise.all(
  Array.from({ length: DRAINERS }, async () => {
    for (;;) {
      const s = performance.now();
      const job = await queue.claim("jobs");
      const took = performance.now() - s;
      if (job === null) return;
      claimMs[order++] = took;
      await queue.ack(job);
    }
  }),
);
const drainS = (performance.now() - t0) / 1000;
gcObserver.disconnect();
const after = { stats: queue.engineStats, sched: schedstat(), load: loadavg()[0]! };
console.log(
  `queue-drain: jobs=${JOBS} warmup=${WARMUP} drainers=${DRAINERS} store=${LATENCY_MS > 0 ? `withLatency(memory, ${LATENCY_MS} ms)` : "MemoryStore"} payload=64 B`,
);
console.log(
  `fill: ${fillS.toFixed(1)} s (${Math.round(JOBS / fillS).toLocaleString("en-US")} enqueues/s in batches of 1000); drain: ${drainS.toFixed(1)} s (${Math.round(JOBS / drainS).toLocaleString("en-US")} claim+ack/s)`,
);
const checkpoints = after.stats.checkpoints - before.stats.checkpoints;
const compactions = after.stats.compactions - before.stats.compactions;
const mib = (after.stats.checkpointBytes - before.stats.checkpointBytes) / 1024 / 1024;
console.log(
  `during the drain: ${checkpoints} checkpoints (${compactions} full), ${mib.toFixed(1)} MiB of segments; GC ${gc.count} pauses, ${gc.ms.toFixed(0)} ms in all, longest ${gc.maxMs.toFixed(1)} ms`,
);
if (before.sched && after.sched) {
  const wait = after.sched.wait - before.sched.wait;
  console.log(
    `main thread: ${(after.sched.cpu - before.sched.cpu).toFixed(0)} ms on CPU, ${wait.toFixed(0)} ms runnable but waiting for a core; load average ${before.load.toFixed(1)} -> ${after.load.toFixed(1)} (2 shared cores)`,
  );
}
console.log(`claims over 4 ms: ${claimMs.filter((ms) => ms > 4).length}`);
console.log("| claims | p50 | p99 | max |");
console.log("|---|---|---|---|");
for (let d = 0; d < 10; d++) {
  const slice = claimMs.slice((d * JOBS) / 10, ((d + 1) * JOBS) / 10).sort((a, b) => a - b);
  console.log(
    `| ${(d * JOBS) / 10 + 1}-${((d + 1) * JOBS) / 10} | ${percentile(slice, 50).toFixed(3)} ms | ${percentile(slice, 99).toFixed(3)} ms | ${slice[slice.length - 1]!.toFixed(2)} ms |`,
  );
}
await queue.close();
