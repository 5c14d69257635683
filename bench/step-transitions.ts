/**
 * @module Workflow step transitions: the runtime's overhead per step.
 *
 * N runs of M steps whose runner returns `continueNow` with the same
 * payload at once (the last step succeeds). Reports steps per second (all
 * steps over the time from the first submit to the last termination), the
 * transition latency (between step k−1 and step k of one run being handed
 * to the runner: one ack with the next enqueue, one claim), run end-to-end
 * latency, object-store requests and bytes written per step and engine
 * commits (batches appended to the WAL) per step and the process's CPU time
 * (user + system) per step, over MemoryStore, a
 * LocalStore directory and a MemoryStore behind 20 ms ± 5 ms of latency.
 *
 * Env: N_RUNS (100), N_STEPS (10), MAX_CONCURRENT_STEPS (runtime default 16
 * unless set), SUBMIT_CONCURRENCY (32), PAYLOAD_BYTES (64), FLUSH_MS (engine
 * flush window, 2), STORES (comma list of memory,local,latency,azurite,gcs;
 * azurite and gcs are AzureBlobStore on Azurite and GcsStore on the JSON API
 * stand-in on loopback, followed by a line of emulator HTTP requests per step), REPEAT (3:
 * each configuration runs this many times and the run with the median
 * steps/s is printed, followed by every run's steps/s), WARMUP (2: each
 * configuration first runs this many times unreported; 0 leaves only the
 * process's first 50 runs on a MemoryStore, the warm-up before this setting).
 *
 * Why each store is warmed: a measured run is about a third of a second, and
 * code the MemoryStore warm-up never ran (release by groups after slow puts,
 * the latency wrapper's timers, the LocalStore's files) is still being
 * compiled during it; the JIT's and the collector's threads count in the
 * process's CPU time, and on the 20 ms store the first runs took 1.5-3 times
 * the CPU per step of the same code warm. Two runs warm it within the noise.
 */
import {
  LocalStore,
  MemoryStore,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  WorkflowRuntime,
  withCounting,
  withLatency,
  type ObjectStore,
  type StepRunner,
} from "../runtime/index.js";
import { percentile } from "./support/percentile.js";
import { withTempDir } from "./support/temp-dir.js";
import { withCloudEmulator } from "./support/cloud-emulators.js";

const N_RUNS = Number(process.env.N_RUNS ?? 100);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const MAX_CONCURRENT_STEPS = process.env.MAX_CONCURRENT_STEPS === undefined ? undefined : Number(process.env.MAX_CONCURRENT_STEPS);
const SUBMIT_CONCURRENCY = Number(process.env.SUBMIT_CONCURRENCY ?? 32);
const PAYLOAD_BYTES = Number(process.env.PAYLOAD_BYTES ?? 64);
const FLUSH_MS = Number(process.env.FLUSH_MS ?? 2);
const STORES = (process.env.STORES ?? "memory,local,latency").split(",");
const REPEAT = Number(process.env.REPEAT ?? 3);
const WARMUP = Number(process.env.WARMUP ?? 2);

const ms = (x: number) => `${x.toFixed(2)} ms`;

interface Row {
  stepsPerSec: number;
  line: string;
}

async function bench(label: string, inner: ObjectStore, nRuns: number): Promise<Row> {
  const store = withCounting(inner);
  const queue = await Queue.open(store, "bench", { flushIntervalMs: FLUSH_MS });
  // Step k of run r is handed to the runner at seen[r][k] (ms, monotonic).
  const seen = new Map<string, number[]>();
  const runner: StepRunner = {
    async runStep(s) {
      let t = seen.get(s.runId);
      if (t === undefined) seen.set(s.runId, (t = []));
      t[s.stepNumber] = performance.now();
      return s.stepNumber + 1 < N_STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
    },
  };
  let b = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).logger({ error: (o) => console.error(o) });
  if (MAX_CONCURRENT_STEPS !== undefined) b = b.maxConcurrentSteps(MAX_CONCURRENT_STEPS);
  const runtime = b.build();
  const worker = runtime.spawn();
  const payload = new Uint8Array(PAYLOAD_BYTES).fill(7);
  const base = { ...store.counts };
  const batches0 = queue.engineStats.walBatches;
  const ids = Array.from({ length: nRuns }, (_, i) => `run-${i}`);
  const submittedAt = new Map<string, number>();
  const endedAt = new Map<string, number>();
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  let next = 0;
  const waits: Promise<void>[] = [];
  await Promise.all(
    Array.from({ length: Math.min(SUBMIT_CONCURRENCY, nRuns) }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        submittedAt.set(id, performance.now());
        await runtime.submit({ input: payload, runId: id });
        waits.push(runtime.wait(id).then(() => void endedAt.set(id, performance.now())));
      }
    }),
  );
  await Promise.all(waits);
  const elapsed = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const commits = queue.engineStats.walBatches - batches0;
  await worker.shutdown();
  const counts = store.counts;
  await queue.close();

  const transitions: number[] = [];
  for (const t of seen.values()) for (let k = 1; k < t.length; k++) transitions.push(t[k]! - t[k - 1]!);
  transitions.sort((a, b) => a - b);
  const e2e = ids.map((id) => endedAt.get(id)! - submittedAt.get(id)!).sort((a, b) => a - b);
  const steps = nRuns * N_STEPS;
  const per = (n: number) => (n / steps).toFixed(3);
  const stepsPerSec = steps / elapsed;
  return {
    stepsPerSec,
    line: `| ${label} | ${nRuns}×${N_STEPS} | ${Math.round(steps / elapsed).toLocaleString("en-US")} | ${ms(percentile(transitions, 50))} | ${ms(percentile(transitions, 99))} | ${ms(percentile(e2e, 50))} | ${ms(percentile(e2e, 99))} | ${per(counts.puts - base.puts)} | ${per(counts.gets - base.gets)} | ${per(counts.lists - base.lists)} | ${per(counts.deletes - base.deletes)} | ${Math.round((counts.bytesIn - base.bytesIn) / steps)} | ${per(commits)} | ${Math.round((cpu.user + cpu.system) / steps)} |`,
  };
}

/**
 * Runs `make()` REPEAT times and prints the run with the median steps/s (runs this short are noisy on a shared host),
 * after WARMUP unreported runs.
 */
async function median(make: () => Promise<Row>): Promise<void> {
  for (let i = 0; i < WARMUP; i++) await make();
  const rows: Row[] = [];
  for (let i = 0; i < REPEAT; i++) rows.push(await make());
  rows.sort((a, b) => a.stepsPerSec - b.stepsPerSec);
  const m = rows[Math.floor(rows.length / 2)]!;
  console.log(`${m.line} ${rows.map((r) => Math.round(r.stepsPerSec)).join(" / ")} |`);
}

console.log(
  `step-transitions: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} MAX_CONCURRENT_STEPS=${MAX_CONCURRENT_STEPS ?? "16 (runtime default)"} SUBMIT_CONCURRENCY=${SUBMIT_CONCURRENCY} PAYLOAD_BYTES=${PAYLOAD_BYTES} FLUSH_MS=${FLUSH_MS} WARMUP=${WARMUP}`,
);
console.log(
  "| store | runs×steps | steps/s | transition p50 | transition p99 | run e2e p50 | run e2e p99 | puts/step | gets/step | lists/step | deletes/step | bytes put/step | engine commits/step | CPU µs/step | steps/s of each run |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
// Warm-up (not reported): the first runs of a process pay for JIT compilation.
await bench("warm-up", new MemoryStore(), 50);
for (const kind of STORES) {
  if (kind === "memory") await median(() => bench("MemoryStore", new MemoryStore(), N_RUNS));
  else if (kind === "local") {
    await median(() => withTempDir("bench-steps-", (dir) => bench("LocalStore", new LocalStore(dir), N_RUNS)));
  } else if (kind === "latency") {
    const slow = () => withLatency(new MemoryStore(), { ms: 20, jitterMs: 5 });
    await median(() => bench("withLatency(20 ms ± 5 ms)", slow(), N_RUNS));
    await median(() => bench("withLatency(20 ms ± 5 ms)", slow(), 10));
  } else if (kind === "azurite" || kind === "gcs") {
    await withCloudEmulator(kind, async (emulator) => {
      const before = emulator.httpRequests();
      await median(() => bench(emulator.label, emulator.makeStore(), N_RUNS));
      const requests = emulator.httpRequests() - before;
      const runs = REPEAT + WARMUP;
      console.log(
        `|  ↳ HTTP requests that reached the emulator per step, over all ${runs} runs (warm-up included): ${(requests / (runs * N_RUNS * N_STEPS)).toFixed(2)} |`,
      );
    });
  } else throw new Error(`unknown store ${kind}`);
}
