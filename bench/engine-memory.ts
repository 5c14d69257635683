/**
 * @module Engine memory: what a backlog of pending jobs costs in resident
 * memory, through the queue on a LocalStore.
 *
 * Fills N pending jobs of 64 B (argv[2], default 100000) in batches of 1000,
 * closes the queue, reopens it, then drains the backlog with DRAINERS
 * (default 128) claim→ack loops. Reports per phase: peak RSS and heap
 * sampled every 50 ms, RSS and heap at the end of the phase (after a full
 * GC when run with --expose-gc), the time, the process CPU time, the longest
 * the event loop was blocked (a write's freeze and merge work, a reopen's
 * segment decoding; sampled with a 10 ms timer), and the store requests per
 * claim while draining. Engine cache counters are printed when the engine has
 * them. Below the table: what the reopen replayed, and the engine's work
 * during the drain (checkpoints and compactions and when they ended, WAL,
 * commits acknowledged late, paged reads and their store reads, key-run
 * freezes and merges), so a slow drain says where its time went. RECORD_CACHE_BYTES sets the queue's `recordCacheBytes` ("none":
 * every record stays in memory, as before paging).
 *
 * STORE_DIR keeps the store in that directory instead of a temporary one;
 * with SKIP_FILL=1 the run starts at the reopen, over a store an earlier run
 * left there (pass the same N): the reopen then runs in a fresh process, so
 * its RSS is not the fill's memory that the process kept. STOP_AFTER_FILL=1
 * closes after the fill, so that such a reopen replays the WAL the fill
 * left uncheckpointed (the fill row reports how much that was).
 *
 * The end-of-phase figures are taken after two full GCs 100 ms apart: array
 * buffers freed by a GC are returned by a background sweep, and
 * `arrayBuffers` read right after one GC still counts many of them.
 *
 *   npx tsx --expose-gc bench/engine-memory.ts 100000
 *   npx tsx --expose-gc bench/engine-memory.ts 1000000
 *
 * Under tsx, the first run of a tree whose sources changed compiles them in
 * the process and starts from a baseline 30-45 MB higher (126-134 MB warm,
 * 159-176 MB cold at 1,000 and 1M jobs), which lifts its peak by about as
 * much: run it once with a small N first (`... engine-memory.ts 1000`), and
 * compare peaks only with the baseline line beside them. A bundle
 * (`npx esbuild bench/engine-memory.ts --bundle --packages=external
 * --platform=node --format=esm --outfile=bench/.out/mem.mjs`, run by
 * `node --expose-gc`) starts at about 70 MB.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { getHeapSpaceStatistics } from "node:v8";
import { PerformanceObserver, constants as perfConstants, monitorEventLoopDelay } from "node:perf_hooks";
import { LocalStore, Queue, withCounting, type EngineStats } from "../runtime/index.js";
import { withTempDir } from "./support/temp-dir.js";
import { formatBreakdown, smapsBreakdown } from "./support/smaps-breakdown.js";
import { trackKeyRuns } from "../runtime/engine/key-run-tally.js";
import { keyRunFamilies, keyRunLine } from "./support/key-run-walk.js";
import { LayeredState } from "../runtime/engine/layered-state.js";
import { RunMerge } from "../runtime/engine/run-merge.js";
import { KeyRunBuilder } from "../runtime/engine/key-run.js";

const N = Number(process.argv[2] ?? 100_000);
const DRAINERS = Number(process.env.DRAINERS ?? 128);
/** DRAIN_LIMIT: stop the drain after this many claims (a 1M drain takes long on a busy machine). Default: all. */
const DRAIN_LIMIT = Number(process.env.DRAIN_LIMIT ?? N);
/** RECORD_CACHE_BYTES: the queue's `recordCacheBytes`; "none" keeps every record in memory (the previous behaviour). */
const CACHE_ENV = process.env.RECORD_CACHE_BYTES;
const recordCacheBytes = CACHE_ENV === undefined ? undefined : CACHE_ENV === "none" ? null : Number(CACHE_ENV);
const PAYLOAD = new Uint8Array(64).fill(7);
const MB = 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;
const STORE_DIR = process.env.STORE_DIR;
const SKIP_FILL = process.env.SKIP_FILL === "1";
/** PUT_THREAD=0: LocalStore without its put thread (every put through the thread pool). */
const PUT_THREAD = process.env.PUT_THREAD !== "0";
/** PROGRESS=1: print a line per tenth of the fill (RSS, heap, buffers, WAL not yet checkpointed, checkpoints), to see what grows with the jobs. */
const PROGRESS = process.env.PROGRESS === "1";
/** FILL_ONLY=1 (or STOP_AFTER_FILL=1; with STORE_DIR): stop after the fill, so a later SKIP_FILL=1 run reopens the store in a fresh process, under other limits. */
const FILL_ONLY = process.env.FILL_ONLY === "1" || process.env.STOP_AFTER_FILL === "1";
/** FOLD_BY_TIER=1: the engine's `foldRunsByTier` (compaction by tiers; off by default). */
const FOLD_BY_TIER = process.env.FOLD_BY_TIER === "1";
/**
 * KEY_RUNS=1: tracks the engine's key runs; the trace and progress lines add
 * their sums (runs, entries, bytes, resizable buffers and what they reserve),
 * and the end of the fill adds, after a full GC, the sums and a walk of
 * their keys by family (bench/support/key-run-walk.ts).
 */
const KEY_RUNS = process.env.KEY_RUNS === "1";
if (KEY_RUNS) trackKeyRuns();

/** What a phase cost besides its time: peak RSS and heap, CPU time, and the longest event-loop block. */
interface PhaseCost {
  rssPeak: number;
  heapPeak: number;
  cpuS: number;
  blockMs: number;
}

/** Samples RSS and heap every 50 ms while a phase runs, and measures its CPU time and event-loop blocks. */
function sampler(): { stop(): PhaseCost } {
  let rssPeak = 0;
  let heapPeak = 0;
  const sample = () => {
    const m = process.memoryUsage();
    rssPeak = Math.max(rssPeak, m.rss);
    heapPeak = Math.max(heapPeak, m.heapUsed);
  };
  sample();
  const t = setInterval(sample, 50);
  const cpu0 = process.cpuUsage();
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  return {
    stop() {
      clearInterval(t);
      delay.disable();
      sample();
      const cpu = process.cpuUsage(cpu0);
      return { rssPeak, heapPeak, cpuS: (cpu.user + cpu.system) / 1e6, blockMs: delay.max / 1e6 };
    },
  };
}

async function settled(): Promise<{ rss: number; heap: number; buffers: number }> {
  gc?.();
  await new Promise((r) => setTimeout(r, 100));
  gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed, buffers: m.arrayBuffers };
}

/** One line of fill progress: what the process holds after `jobs` jobs. */
function progress(jobs: number, queue: Queue, t0: number): void {
  const m = process.memoryUsage();
  const st = queue.engineStats;
  const f = (b: number) => (b / MB).toFixed(0);
  console.log(
    `progress: ${jobs.toLocaleString("en-US")} jobs, ${((performance.now() - t0) / 1000).toFixed(1)} s: RSS ${f(m.rss)} MB, heap ${f(m.heapUsed)} MB, buffers ${f(m.arrayBuffers)} MB; WAL objects not checkpointed ${st.walObjectsSinceCheckpoint}, checkpoints ${st.checkpoints}, compactions ${st.compactions} (${(st.checkpointBytes / MB).toFixed(0)} MB of segments written), segment runs ${st.segmentRuns}, load ${loadavg()[0]!.toFixed(1)}${KEY_RUNS ? `; ${keyRunLine()}` : ""}`,
  );
}

/**
 * MEM_TRACE=1: during the fill and the drain, samples every 200 ms what the
 * process holds (RSS split into anonymous and file-backed pages, heap used
 * and total per space, external, array buffers), the collections since the
 * last sample (scavenges and mark-compacts), and what the engine is doing
 * (checkpoint or compaction running, WAL not yet checkpointed, cached blocks,
 * key runs), and prints the samples around the peak RSS, so the peak says
 * what set it.
 */
const MEM_TRACE = process.env.MEM_TRACE === "1";
/**
 * MEM_MAPS=1 (with MEM_TRACE): each sample that sets a new RSS peak also reads
 * /proc/self/smaps and splits RSS by kind of mapping (bench/support/smaps-breakdown.ts),
 * so the peak line says what the part outside the heap and array buffers is.
 */
const MEM_MAPS = process.env.MEM_MAPS === "1";
/**
 * MEM_PEAK_LIVE=1 (with MEM_TRACE): prints a sample as soon as it sets an RSS
 * peak 8 MB or more above the last one printed, so a long fill stopped before
 * its end (a 10M fill on a busy machine) still says its peak so far and what made it.
 */
const MEM_PEAK_LIVE = process.env.MEM_PEAK_LIVE === "1";
/** RssAnon and RssFile of /proc/self/status in MB (Linux only; empty elsewhere). */
function rssParts(): string {
  let status: string;
  try {
    status = readFileSync("/proc/self/status", "utf8");
  } catch {
    return "";
  }
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return ` (anon ${(kb("RssAnon") / 1024).toFixed(0)}, file ${(kb("RssFile") / 1024).toFixed(0)})`;
}

function memTrace(queue: Queue, t0: number, claimed: () => number, what = "claim"): { stop(): string[] } {
  const samples: { rss: number; line: string }[] = [];
  const f = (b: number) => (b / MB).toFixed(0);
  let last = queue.engineStats;
  // Collections since the last sample: what moved between two samples is often one of them.
  let scavenges = 0;
  let markCompacts = 0;
  const gcs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) markCompacts++;
      else if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
    }
  });
  gcs.observe({ entryTypes: ["gc"] });
  let rssMax = 0;
  let printedPeak = 0;
  const take = () => {
    const m = process.memoryUsage();
    let maps = "";
    if (MEM_MAPS && m.rss > rssMax) {
      rssMax = m.rss;
      const b = smapsBreakdown();
      // The rest (RSS less heap committed and external) as file + arenas + stacks + what is left of brk and other anonymous pages.
      if (b !== null) maps = `; maps: ${formatBreakdown(b)}; rest = file + arenas + stacks + ${f(b.brk + b.anonOther - m.heapTotal - m.external)}`;
    }
    const st = queue.engineStats;
    const spaces = getHeapSpaceStatistics()
      .filter((sp) => sp.space_size > 0)
      .map((sp) => `${sp.space_name.replace("_space", "")} ${f(sp.space_used_size)}/${f(sp.space_size)}`)
      .join(", ");
    const busy = st.checkpoints !== last.checkpoints ? " (a checkpoint ended)" : "";
    last = st;
    const gcsSince = `${scavenges} minor ${markCompacts} major`;
    scavenges = 0;
    markCompacts = 0;
    samples.push({
      rss: m.rss,
      line: `${((performance.now() - t0) / 1000).toFixed(1)} s, ${what} ${claimed()}: RSS ${f(m.rss)}${rssParts()}, GCs since last ${gcsSince}, heap ${f(m.heapUsed)}/${f(m.heapTotal)}, external ${f(m.external)}, array buffers ${f(m.arrayBuffers)}, rest ${f(m.rss - m.heapTotal - m.external)} MB; spaces ${spaces}; WAL since checkpoint ${(st.walBytesSinceCheckpoint / MB).toFixed(1)} MB, cache ${(st.cacheBytes / MB).toFixed(1)} MB, runs ${st.segmentRuns}, key runs ${st.keyRuns}, checkpoints ${st.checkpoints}, compactions ${st.compactions}${busy}${maps}${KEY_RUNS ? `; ${keyRunLine()}` : ""}`,
    });
    if (MEM_PEAK_LIVE && m.rss >= printedPeak + 8 * MB) {
      printedPeak = m.rss;
      console.log(`peak so far (load ${loadavg()[0]!.toFixed(1)}): ${samples[samples.length - 1]!.line}`);
    }
  };
  const timer = setInterval(take, 200);
  return {
    stop() {
      clearInterval(timer);
      gcs.disconnect();
      let at = 0;
      for (let i = 1; i < samples.length; i++) if (samples[i]!.rss > samples[at]!.rss) at = i;
      return samples.slice(Math.max(0, at - 25), at + 10).map((s, i) => `trace${i + Math.max(0, at - 25) === at ? " PEAK" : ""}: ${s.line}`);
    },
  };
}

/**
 * The longest event-loop blocks of a phase and where they happened: a 10 ms
 * timer notes each turn that came more than 50 ms late, with the jobs or
 * claims so far and what the engine's counters did across it (key runs,
 * merges started, catch-ups, freezes, checkpoints), so a block says whether
 * a merge's catch-up, a freeze or a checkpoint ran in it. The five longest
 * are printed below the table.
 */
function blockTrace(queue: Queue, t0: number, done: () => number, what: string): { stop(): string[] } {
  const found: { ms: number; line: string }[] = [];
  let prev = performance.now();
  let last = queue.engineStats;
  const timer = setInterval(() => {
    const now = performance.now();
    const st = queue.engineStats;
    const late = now - prev - 10;
    if (late > 50) {
      const d = (k: keyof EngineStats) => (st[k] as number) - (last[k] as number);
      found.push({
        ms: late,
        line: `${late.toFixed(0)} ms late at ${((now - t0) / 1000).toFixed(1)} s, ${what} ${done().toLocaleString("en-US")}: key runs ${last.keyRuns} -> ${st.keyRuns}, merges started ${d("runMerges")}, catch-ups ${d("runCatchUps")}, freezes ${d("memtableFreezes")}, entries merged ${d("mergedEntries").toLocaleString("en-US")}, checkpoints ${d("checkpoints")}, load ${loadavg()[0]!.toFixed(1)}`,
      });
      found.sort((a, b) => b.ms - a.ms);
      found.length = Math.min(found.length, 5);
    }
    prev = now;
    last = st;
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return found.map((b, i) => `block ${i + 1}: ${b.line}`);
    },
  };
}

/**
 * OP_TIMES=1: times the key-run work that runs inside one turn (a write with
 * its freeze and merge share, a freeze, a merge's slice, its last step that
 * builds the output and replaces the inputs, a run's build) and prints, per
 * operation, its calls, total and longest time and how many took over 20 ms:
 * which of them an event-loop block was, in wall time of this process alone.
 */
const OP_TIMES = process.env.OP_TIMES === "1";
const opTimes = new Map<string, { calls: number; totalMs: number; maxMs: number; over20: number }>();
function timeMethod(proto: object, name: string, label: string): void {
  const target = proto as Record<string, (...args: unknown[]) => unknown>;
  const original = target[name]!;
  const t: { calls: number; totalMs: number; maxMs: number; over20: number } = { calls: 0, totalMs: 0, maxMs: 0, over20: 0 };
  opTimes.set(label, t);
  target[name] = function (this: unknown, ...args: unknown[]) {
    const t0 = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      const ms = performance.now() - t0;
      t.calls++;
      t.totalMs += ms;
      if (ms > t.maxMs) t.maxMs = ms;
      if (ms > 20) t.over20++;
    }
  };
}
if (OP_TIMES) {
  for (const m of ["set", "delete", "freeze", "addRun", "mergeStep", "finishMerges"]) timeMethod(LayeredState.prototype, m, `LayeredState.${m}`);
  for (const m of ["step", "finish"]) timeMethod(RunMerge.prototype, m, `RunMerge.${m}`);
  timeMethod(KeyRunBuilder.prototype, "finish", "KeyRunBuilder.finish");
}
function opTimeLines(): string[] {
  return [...opTimes]
    .filter(([, t]) => t.calls > 0)
    .map(
      ([k, t]) =>
        `op ${k}: ${t.calls.toLocaleString("en-US")} calls, ${t.totalMs.toFixed(0)} ms in all, longest ${t.maxMs.toFixed(1)} ms, ${t.over20} over 20 ms`,
    );
}

const rows: string[] = [];
function row(phase: string, seconds: number, peak: PhaseCost, end: { rss: number; heap: number; buffers: number }, extra = ""): void {
  const f = (b: number) => (b / MB).toFixed(0);
  rows.push(
    `| ${phase} | ${seconds.toFixed(2)} s | ${peak.cpuS.toFixed(2)} s | ${peak.blockMs.toFixed(0)} ms | ${f(peak.rssPeak)} MB | ${f(peak.heapPeak)} MB | ${f(end.rss)} MB | ${f(end.heap)} MB | ${f(end.buffers)} MB | ${extra} |`,
  );
}

/** The WAL no checkpoint covers yet (what a reopen replays), and the commits acknowledged late because of it. */
function backlogNote(stats: EngineStats): string {
  // Older engines lack the last two counters: print what there is.
  const { walBytesSinceCheckpoint: bytes, backlogWaits: waits } = stats as Partial<EngineStats>;
  const mb = bytes === undefined ? "" : `, ${(bytes / MB).toFixed(1)} MB`;
  return `WAL since the last checkpoint ${stats.walObjectsSinceCheckpoint} objects${mb}; commits acknowledged late ${waits ?? "n/a"}`;
}

const notes: string[] = [];

/** What the engine holds right after open: the WAL it replayed (a checkpoint starts at open when it reaches the trigger), its segment runs and key runs. */
function openState(st: EngineStats): string {
  return `WAL replayed and not yet checkpointed ${st.walObjectsSinceCheckpoint} objects, ${(st.walBytesSinceCheckpoint / MB).toFixed(1)} MB; segment runs ${st.segmentRuns}; key runs in memory ${st.keyRuns} (${st.memtableFreezes} freezes, ${st.runMerges} merges, ${st.runCatchUps} catch-ups, ${st.mergedEntries.toLocaleString("en-US")} entries merged while opening)`;
}

/** The memtable's size now, how often the engine changed it and what its grows took back (older engines lack these counters). */
function memtableLine(st: EngineStats): string {
  const { memtableKeys, memtableGrows, memtableShrinks, takeBacks, takenBack } = st as Partial<EngineStats>;
  if (memtableKeys === undefined) return "memtable size not reported by this engine";
  const taken = takeBacks === undefined ? "" : `, ${takeBacks} take-backs of ${takenBack?.toLocaleString("en-US")} run entries`;
  return `memtable freezes at ${memtableKeys.toLocaleString("en-US")} keys (${memtableGrows} grows, ${memtableShrinks} shrinks${taken} since open)`;
}

/** The engine's work between two readings of its counters: where a drain's time may go besides the claims. */
function drainCounters(a: EngineStats, b: EngineStats): string {
  const d = (k: keyof EngineStats) => (b[k] as number) - (a[k] as number);
  const hits = d("cacheHits");
  const misses = d("cacheMisses");
  return [
    `checkpoints ${d("checkpoints")} (compactions ${d("compactions")}, folds by tier ${d("runsFoldedByTier")}, ${(d("checkpointBytes") / MB).toFixed(1)} MB of segments written), segment runs ${a.segmentRuns} -> ${b.segmentRuns}`,
    `WAL puts ${d("walPuts")} (${(d("walBytes") / MB).toFixed(1)} MB, ${d("walBatches")} commits), WAL since the last checkpoint ${(a.walBytesSinceCheckpoint / MB).toFixed(1)} -> ${(b.walBytesSinceCheckpoint / MB).toFixed(1)} MB, commits acknowledged late ${d("backlogWaits")}`,
    `paged reads ${hits} hits, ${misses} block misses, ${d("segmentFetches")} store reads for them`,
    `key runs ${a.keyRuns} -> ${b.keyRuns}, ${d("memtableFreezes")} freezes, ${d("runMerges")} merges, ${d("runCatchUps")} catch-ups, ${d("mergedEntries").toLocaleString("en-US")} entries merged`,
  ].join("; ");
}

/**
 * Notes, every 50 ms, when a checkpoint or compaction ends during the drain
 * and when commits start waiting for one, with the time and the claims so
 * far, so a slow drain shows what ran alongside which part of it.
 */
function drainTimeline(queue: Queue, t0: number, claimed: () => number): { stop(): string[] } {
  const events: string[] = [];
  let last = queue.engineStats;
  /** The claims made when commits started waiting, until claims move on again. */
  let stalledAt: number | undefined;
  let mostRuns = last.segmentRuns;
  const at = () => `${((performance.now() - t0) / 1000).toFixed(2)} s (claim ${claimed().toLocaleString("en-US")})`;
  const poll = () => {
    const st = queue.engineStats;
    if (st.checkpoints !== last.checkpoints) {
      const kind = st.compactions !== last.compactions ? "compaction" : st.runsFoldedByTier !== last.runsFoldedByTier ? "fold by tier" : "checkpoint";
      events.push(`${kind} ended at ${at()}, ${((st.checkpointBytes - last.checkpointBytes) / MB).toFixed(1)} MB written`);
    }
    if (stalledAt !== undefined && claimed() > stalledAt) {
      events.push(`claims moved on by ${at()}`);
      stalledAt = undefined;
    }
    if (st.backlogWaits !== last.backlogWaits) {
      events.push(`${st.backlogWaits - last.backlogWaits} commits acknowledged late by ${at()}`);
      stalledAt ??= claimed();
    }
    if (st.runCatchUps !== last.runCatchUps) events.push(`merge catch-up by ${at()}`);
    mostRuns = Math.max(mostRuns, st.segmentRuns);
    last = st;
  };
  const timer = setInterval(poll, 50);
  return {
    stop() {
      clearInterval(timer);
      poll();
      events.push(`most segment runs listed ${mostRuns}`);
      return events;
    },
  };
}

function cacheNote(stats: EngineStats): string {
  const total = stats.cacheHits + stats.cacheMisses;
  if (total === 0) return "; no paged reads";
  return `; cache: ${((100 * stats.cacheHits) / total).toFixed(2)}% of ${total} paged reads hit, ${stats.segmentFetches} store reads for them (blocks, indexes, compactions), ${(stats.cacheBytes / MB).toFixed(1)} MB cached`;
}

const load0 = loadavg();
const engineOpts = {
  ...(recordCacheBytes === undefined ? {} : { recordCacheBytes }),
  ...(FOLD_BY_TIER ? { engineOptions: { foldRunsByTier: true } } : {}),
};
const inDir = (fn: (dir: string) => Promise<void>) => (STORE_DIR === undefined ? withTempDir("taquba-engine-memory-", fn) : fn(STORE_DIR));
await inDir(async (dir) => {
  const base = await settled();
  let queue: Queue;
  let s: ReturnType<typeof sampler>;
  let t: number;
  if (!SKIP_FILL) {
    // Fill.
    queue = await Queue.open(new LocalStore(dir, { putThread: PUT_THREAD }), "mem", { ...engineOpts });
    s = sampler();
    t = performance.now();
    // The most segment runs the newest manifest listed during the fill (runs beside long compactions pile up).
    let mostRuns = 0;
    const runsTimer = setInterval(() => {
      mostRuns = Math.max(mostRuns, queue.engineStats.segmentRuns);
    }, 100);
    const tenth = Math.max(1000, Math.ceil(N / 10 / 1000) * 1000);
    let filled = 0;
    const fillTrace = MEM_TRACE ? memTrace(queue, t, () => filled, "job") : undefined;
    const fillBlocks = blockTrace(queue, t, () => filled, "job");
    for (let i = 0; i < N; i += 1000) {
      const n = Math.min(1000, N - i);
      await queue.enqueueBatch(Array.from({ length: n }, () => ({ queueName: "jobs", payload: PAYLOAD })));
      filled = i + n;
      if (PROGRESS && (i + n) % tenth === 0) progress(i + n, queue, t);
    }
    const fillS = (performance.now() - t) / 1000;
    clearInterval(runsTimer);
    if (fillTrace !== undefined) notes.push(...fillTrace.stop());
    notes.push(...fillBlocks.stop());
    if (OP_TIMES) {
      notes.push("fill:", ...opTimeLines());
      for (const t of opTimes.values()) Object.assign(t, { calls: 0, totalMs: 0, maxMs: 0, over20: 0 });
    }
    const fillStats = queue.engineStats;
    notes.push(`after the fill: ${memtableLine(fillStats)}`);
    if (KEY_RUNS) {
      await settled();
      notes.push(`after the fill, after a full GC: ${keyRunLine()}`, ...keyRunFamilies());
    }
    row(
      "fill",
      fillS,
      s.stop(),
      await settled(),
      `${Math.round(N / fillS).toLocaleString("en-US")} jobs/s; ${backlogNote(fillStats)}; most segment runs ${mostRuns}, ${fillStats.checkpoints} checkpoints, ${fillStats.compactions} compactions, ${fillStats.runsFoldedByTier} folds by tier, ${(fillStats.checkpointBytes / MB).toFixed(0)} MB of segments written`,
    );
    await queue.close();
    if (FILL_ONLY) {
      printRows(base);
      return;
    }
  }

  // Reopen.
  const store = withCounting(new LocalStore(dir, { putThread: PUT_THREAD }));
  s = sampler();
  t = performance.now();
  const cpu0 = process.cpuUsage();
  queue = await Queue.open(store, "mem", { ...engineOpts });
  const openS = (performance.now() - t) / 1000;
  const cpu = process.cpuUsage(cpu0);
  row(
    SKIP_FILL ? "reopen (fresh process)" : "reopen",
    openS,
    s.stop(),
    await settled(),
    `${store.counts.gets} gets; CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s`,
  );
  notes.push(`after the reopen: ${openState(queue.engineStats)}`);

  // Drain.
  store.reset();
  const before = queue.engineStats;
  s = sampler();
  t = performance.now();
  let claims = 0;
  const timeline = drainTimeline(queue, t, () => claims);
  const trace = MEM_TRACE ? memTrace(queue, t, () => claims) : undefined;
  const drainBlocks = blockTrace(queue, t, () => claims, "claim");
  await Promise.all(
    Array.from({ length: DRAINERS }, async () => {
      while (claims < DRAIN_LIMIT) {
        const job = await queue.claim("jobs");
        if (job === null) return;
        claims++;
        await queue.ack(job);
      }
    }),
  );
  const drainS = (performance.now() - t) / 1000;
  const events = timeline.stop();
  if (trace !== undefined) notes.push(...trace.stop());
  notes.push(...drainBlocks.stop());
  if (OP_TIMES) notes.push("drain:", ...opTimeLines());
  const c = store.counts;
  const perClaim = (n: number) => (n / Math.max(1, claims)).toFixed(3);
  row(
    claims < N ? `drain (first ${claims.toLocaleString("en-US")})` : "drain",
    drainS,
    s.stop(),
    await settled(),
    `${Math.round(claims / drainS).toLocaleString("en-US")} claims/s; per claim ${perClaim(c.gets)} gets, ${perClaim(c.puts)} puts${cacheNote(queue.engineStats)}`,
  );
  notes.push(`drain counters: ${drainCounters(before, queue.engineStats)}`);
  notes.push(`after the drain: ${memtableLine(queue.engineStats)}`);
  if (events.length > 0) notes.push(`during the drain: ${events.join("; ")}`);
  // A store filled by an earlier run may have been partly drained by another: its drain ends when the queue is empty.
  if (SKIP_FILL && claims < Math.min(N, DRAIN_LIMIT)) notes.push(`the queue was empty after ${claims.toLocaleString("en-US")} claims`);
  else if (claims < Math.min(N, DRAIN_LIMIT)) throw new Error(`drained ${claims} jobs, expected ${Math.min(N, DRAIN_LIMIT)}`);
  await queue.close();
  printRows(base);
});

function printRows(base: { rss: number; heap: number }): void {
  const f = (b: number) => (b / MB).toFixed(0);
  console.log(
    `engine-memory: ${N.toLocaleString("en-US")} pending jobs of 64 B, LocalStore${SKIP_FILL ? " (filled by an earlier run)" : ""}, ${DRAINERS} drainers, recordCacheBytes ${recordCacheBytes === undefined ? "default" : String(recordCacheBytes)}${FOLD_BY_TIER ? ", runs folded by tier" : ""}${PUT_THREAD ? "" : ", put thread off"}`,
  );
  console.log(
    `baseline before the queue opened: RSS ${f(base.rss)} MB, heap ${f(base.heap)} MB; GC before end figures: ${gc ? "yes" : "no (run with --expose-gc)"}`,
  );
  console.log(
    `load average at start ${load0.map((l) => l.toFixed(2)).join(" ")}, at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  console.log("| phase | time | CPU | longest event-loop block | peak RSS | peak heap | RSS at end | heap at end | buffers at end | notes |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(r);
  for (const n of notes) console.log(n);
}
