/**
 * @module Engine fill trace: where a fill's resident memory is at its peak.
 *
 * Fills N pending 64 B jobs (argv[2], default 300000) through the queue on a
 * LocalStore in batches of 1000, sampling every 50 ms what the process
 * holds: RSS split into mapped files and anonymous memory (Linux
 * /proc/self/status), the V8 heap reserved and used, external memory and the
 * array buffers among it, and the engine's checkpoint counters. Prints a
 * sample about once a second (EVERY_MS), then the sample at the peak RSS,
 * the first sample (the process before the fill) and the fill's time and
 * CPU. Anonymous memory minus the heap reserved and external memory is what
 * the allocator kept after frees, the key runs' resizable buffers (not
 * counted as array buffers) and the process's own; run with `--trace-gc` to
 * see each mark-compact's heap before and after.
 *
 *   npx tsx --expose-gc bench/engine-fill-trace.ts 300000
 *   EVERY_MS=5000 npx tsx --expose-gc --trace-gc bench/engine-fill-trace.ts 1000000
 *
 * Each sample also gives the heap used and external memory 100 ms after the
 * last mark-compact (about what was live then; V8 frees dead array buffers'
 * memory in a background sweep after the collection) and the size of each
 * heap space, so a peak can be split into live data, the heap's growth room
 * (new space included) and dead external buffers.
 *
 * `ENGINE_OPTIONS` (JSON) passes engine options to the queue, to try a
 * setting: `ENGINE_OPTIONS='{"checkpointWalBytes":8388608}'`.
 *
 * `SNAPSHOT_AT` (job counts, comma separated) writes a heap snapshot
 * (`v8.writeHeapSnapshot`, which collects garbage first, so it holds what is
 * live) into the working directory once the fill passes each count; summarize
 * it with `node bench/support/heap-summary.mjs <file>`.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { PerformanceObserver, constants as perfConstants } from "node:perf_hooks";
import { type EngineOptions, LocalStore, Queue } from "../runtime/index.js";
import { withTempDir } from "./support/temp-dir.js";

const N = Number(process.argv[2] ?? 300_000);
const EVERY_MS = Number(process.env.EVERY_MS ?? 1000);
const PAYLOAD = new Uint8Array(64).fill(7);
const MB = 1024 * 1024;
const f = (b: number) => (b / MB).toFixed(0);

/** Resident anonymous memory and mapped files, in bytes (zero where /proc is missing). */
function residentSplit(): { anon: number; file: number } {
  try {
    const s = readFileSync("/proc/self/status", "utf8");
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0) * 1024;
    return { anon: kb("RssAnon"), file: kb("RssFile") };
  } catch {
    return { anon: 0, file: 0 };
  }
}

await withTempDir("taquba-fill-trace-", async (dir) => {
  const engineOptions = process.env.ENGINE_OPTIONS === undefined ? {} : { engineOptions: JSON.parse(process.env.ENGINE_OPTIONS) as EngineOptions };
  const queue = await Queue.open(new LocalStore(dir), "mem", engineOptions);
  const t0 = performance.now();
  let jobs = 0;
  let peak = { rss: 0, line: "" };
  let lastPrint = -Infinity;
  const sample = (): string => {
    const m = process.memoryUsage();
    const st = queue.engineStats;
    const r = residentSplit();
    const line =
      `${((performance.now() - t0) / 1000).toFixed(1)} s, ${jobs.toLocaleString("en-US")} jobs: RSS ${f(m.rss)} MB (files ${f(r.file)}, anonymous ${f(r.anon)}: ` +
      `heap ${f(m.heapTotal)} reserved / ${f(m.heapUsed)} used, external ${f(m.external)} of which array buffers ${f(m.arrayBuffers)}, ` +
      `rest ${f(r.anon - m.heapTotal - m.external)}); checkpoints ${st.checkpoints} (compactions ${st.compactions}), WAL since the last ${f(st.walBytesSinceCheckpoint)} MB, ` +
      `key runs ${st.keyRuns}, segment runs ${st.segmentRuns}, checkpoints beside a compaction ${st.checkpointsBesideCompaction}; ` +
      `after the last mark-compact ${afterMajor}; heap spaces reserved/used ` +
      getHeapSpaceStatistics()
        .filter((x) => x.space_size > 1024 * 1024)
        .map((x) => `${x.space_name.replace("_space", "")} ${f(x.space_size)}/${f(x.space_used_size)}`)
        .join(" ");
    if (m.rss > peak.rss) peak = { rss: m.rss, line };
    return line;
  };
  let afterMajor = "";
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if ((e as unknown as { detail?: { kind?: number } }).detail?.kind !== perfConstants.NODE_PERFORMANCE_GC_MAJOR) continue;
      setTimeout(() => {
        const m = process.memoryUsage();
        afterMajor = `heap used ${f(m.heapUsed)}, external ${f(m.external)} (array buffers ${f(m.arrayBuffers)})`;
      }, 100);
    }
  }).observe({ entryTypes: ["gc"] });
  const first = sample();
  const timer = setInterval(() => {
    const line = sample();
    if (performance.now() - lastPrint < EVERY_MS) return;
    lastPrint = performance.now();
    console.log(line);
  }, 50);
  const snapshotAt = (process.env.SNAPSHOT_AT ?? "")
    .split(",")
    .filter((x) => x !== "")
    .map(Number);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i += 1000) {
    const n = Math.min(1000, N - i);
    await queue.enqueueBatch(Array.from({ length: n }, () => ({ queueName: "jobs", payload: PAYLOAD })));
    jobs = i + n;
    while (snapshotAt.length > 0 && jobs >= snapshotAt[0]!) {
      snapshotAt.shift();
      console.log(`heap snapshot at ${jobs.toLocaleString("en-US")} jobs: ${writeHeapSnapshot()}; ${sample()}`);
    }
  }
  const cpu = process.cpuUsage(cpu0);
  clearInterval(timer);
  sample();
  const s = (performance.now() - t0) / 1000;
  console.log(`first: ${first}`);
  console.log(`peak: ${peak.line}`);
  console.log(
    `fill: ${N.toLocaleString("en-US")} jobs in ${s.toFixed(1)} s (${Math.round(N / s).toLocaleString("en-US")} jobs/s), CPU ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  await queue.close();
});
