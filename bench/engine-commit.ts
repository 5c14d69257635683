/**
 * @module Benchmark: commit throughput and latency of the engine with C
 * concurrent committers of small batches, over a memory store, a local
 * directory, and a memory store with S3-like latency.
 *
 * Run: npx tsx bench/engine-commit.ts
 * Env: C (committers, 256), DURATION_MS (per store, 3000), FLUSH_MS (flush
 * interval, 2), KEYS (puts per batch, 2), VALUE_BYTES (64), LATENCY_MS (20),
 * JITTER_MS (5), STORES (comma list of memory,local,latency,azurite,gcs;
 * azurite and gcs are AzureBlobStore on Azurite and GcsStore on the JSON API
 * stand-in, both on loopback, and also print emulator HTTP requests per commit),
 * COHORTS (`walCohorts`; unset, the engine's default), MEMTABLE_KEYS
 * (`memtableKeys`; unset, the engine's default), COMMITS (commits per
 * committer instead of DURATION_MS: a fixed amount of work, whose CPU time
 * per commit a loaded machine disturbs less than its rate).
 *
 * Also prints the memtable's warm-up: the commits, time and CPU until its
 * first grow, and the freezes and run merges made by then (looked at every
 * 256 commits); and what the grows took back into it (runs' entries, and
 * merges dropped as their runs emptied).
 */
import { tmpdir } from "node:os";
import { Engine, LocalStore, MemoryStore, WriteBatch, withCounting, withLatency, type ObjectStore } from "../runtime/index.js";
import { percentile } from "./support/percentile.js";
import { withTempDir } from "./support/temp-dir.js";
import { withCloudEmulator } from "./support/cloud-emulators.js";

const env = (name: string, dflt: number) => (process.env[name] === undefined ? dflt : Number(process.env[name]));
const C = env("C", 256);
const DURATION_MS = env("DURATION_MS", 3000);
const FLUSH_MS = env("FLUSH_MS", 2);
const KEYS = env("KEYS", 2);
const VALUE_BYTES = env("VALUE_BYTES", 64);
const LATENCY_MS = env("LATENCY_MS", 20);
const JITTER_MS = env("JITTER_MS", 5);
const STORES = (process.env.STORES ?? "memory,local,latency").split(",");
const COHORTS = process.env.COHORTS === undefined ? {} : { walCohorts: Number(process.env.COHORTS) };
const COMMITS = process.env.COMMITS === undefined ? undefined : Number(process.env.COMMITS);
const MEMTABLE = process.env.MEMTABLE_KEYS === undefined ? {} : { memtableKeys: Number(process.env.MEMTABLE_KEYS) };

/** A figure of an engine's stats, 0 when this engine has none by that name. */
function figure(stats: object, name: string): number {
  const v = (stats as Record<string, unknown>)[name];
  return typeof v === "number" ? v : 0;
}

async function run(label: string, store: ObjectStore, httpRequests?: () => number): Promise<void> {
  const counted = withCounting(store);
  const engine = await Engine.open(counted, { flushIntervalMs: FLUSH_MS, ...COHORTS, ...MEMTABLE });
  counted.reset();
  const startStats = engine.stats;
  const startRequests = httpRequests?.() ?? 0;
  const value = new Uint8Array(VALUE_BYTES).fill(7);
  const latencies: number[] = [];
  const deadline = performance.now() + DURATION_MS;
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const more = (i: number) => (COMMITS === undefined ? performance.now() < deadline : i < COMMITS);
  // The first grow, as the stats show it every 256 commits (older engines have no `memtableGrows`).
  let grown: { commits: number; ms: number; cpuMs: number; freezes: number; merges: number; mergedEntries: number } | undefined;
  const watchGrow = () => {
    if (grown !== undefined || latencies.length % 256 !== 0) return;
    const s = engine.stats;
    if (!(figure(s, "memtableGrows") > figure(startStats, "memtableGrows"))) return;
    const c = process.cpuUsage(cpu0);
    grown = {
      commits: latencies.length,
      ms: performance.now() - started,
      cpuMs: (c.user + c.system) / 1000,
      freezes: figure(s, "memtableFreezes") - figure(startStats, "memtableFreezes"),
      merges: figure(s, "runMerges") - figure(startStats, "runMerges"),
      mergedEntries: figure(s, "mergedEntries") - figure(startStats, "mergedEntries"),
    };
  };
  const committer = async (w: number) => {
    for (let i = 0; more(i); i++) {
      const batch = new WriteBatch();
      for (let k = 0; k < KEYS; k++) batch.put(`bench/${w}/${(i * KEYS + k) % 512}`, value);
      const t0 = performance.now();
      await engine.commit(batch);
      latencies.push(performance.now() - t0);
      watchGrow();
    }
  };
  await Promise.all(Array.from({ length: C }, (_, w) => committer(w)));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const stats = engine.stats;
  const requests = (httpRequests?.() ?? 0) - startRequests;
  await engine.close();
  const sorted = Float64Array.from(latencies).sort();
  const commits = latencies.length;
  const walPuts = stats.walPuts - startStats.walPuts;
  const walBytes = stats.walBytes - startStats.walBytes;
  console.log(
    [
      `${label}:`,
      `  commits/s          ${(commits / elapsed).toFixed(0)}  (${commits} commits in ${elapsed.toFixed(2)} s)`,
      `  CPU per commit     ${((cpu.user + cpu.system) / latencies.length).toFixed(2)} µs (user and system, the whole process)`,
      `  commit p50 / p99   ${percentile(sorted, 50).toFixed(2)} ms / ${percentile(sorted, 99).toFixed(2)} ms`,
      `  WAL puts/s         ${(walPuts / elapsed).toFixed(0)}`,
      `  commits per put    ${(commits / walPuts).toFixed(1)}`,
      `  WAL bytes/commit   ${(walBytes / commits).toFixed(1)}`,
      `  store bytes/commit ${(counted.counts.bytesIn / commits).toFixed(1)}  (WAL + ${stats.checkpoints} checkpoints)`,
      // Older engines lack the memtable's counters in their stats, or its size.
      ...("keyRuns" in stats
        ? [
            `  memtable          ${stats.memtableFreezes - startStats.memtableFreezes} freezes, ${stats.keyRuns} key runs at the end${"memtableKeys" in stats ? `, ${stats.memtableKeys} keys at the end (${stats.memtableGrows} grows, ${stats.memtableShrinks} shrinks)` : ""}`,
          ]
        : []),
      ...("memtableGrows" in stats
        ? [
            grown === undefined
              ? "  first grow        none"
              : `  first grow        after ${grown.commits} commits, ${grown.ms.toFixed(0)} ms, ${grown.cpuMs.toFixed(0)} ms CPU, ${grown.freezes} freezes, ${grown.merges} run merges (${grown.mergedEntries} entries)`,
          ]
        : []),
      // Older engines lack the take-back's counters.
      ...("takeBacks" in stats
        ? [
            `  taken back        ${stats.takeBacks - startStats.takeBacks} take-backs, ${stats.takenBack - startStats.takenBack} entries, ${stats.takeBackDroppedMerges - startStats.takeBackDroppedMerges} merges dropped`,
          ]
        : []),
      ...(httpRequests ? [`  HTTP requests/commit ${(requests / commits).toFixed(3)}  (${requests} requests reached the emulator)`] : []),
    ].join("\n"),
  );
}

console.log(
  `engine-commit: C=${C} ${COMMITS === undefined ? `DURATION_MS=${DURATION_MS}` : `COMMITS=${COMMITS}`} FLUSH_MS=${FLUSH_MS} COHORTS=${process.env.COHORTS ?? "(default)"} MEMTABLE_KEYS=${process.env.MEMTABLE_KEYS ?? "(default)"} KEYS=${KEYS} VALUE_BYTES=${VALUE_BYTES} ` +
    `latency store=${LATENCY_MS}±${JITTER_MS} ms, node ${process.version}`,
);
for (const name of STORES) {
  if (name === "memory") await run("MemoryStore", new MemoryStore());
  else if (name === "local") {
    await withTempDir("taquba-bench-", (dir) => run(`LocalStore (${tmpdir()})`, new LocalStore(dir)));
  } else if (name === "latency") {
    await run(`withLatency(MemoryStore, ${LATENCY_MS} ms ± ${JITTER_MS} ms)`, withLatency(new MemoryStore(), { ms: LATENCY_MS, jitterMs: JITTER_MS }));
  } else if (name === "azurite" || name === "gcs") {
    await withCloudEmulator(name, (emulator) => run(emulator.label, emulator.makeStore(), emulator.httpRequests));
  } else throw new Error(`unknown store ${name}; use memory, local, latency, azurite or gcs`);
}
