/**
 * @module What one workflow step waits for on a LocalStore, one run at a
 * time: store requests, engine commits, WAL objects and file-system
 * requests (each one a trip to libuv's thread pool) per step, folders the
 * store created per step (counted on disk: none are removed), and a
 * timeline of one run's step.
 *
 * Commits are the queue's (every commit of the runtime and the queue goes
 * through it, not through `Engine.prototype.commit`); fsyncs are counted on
 * the main thread and inside LocalStore's put thread, which makes a put's
 * calls synchronously in a worker (support/put-thread-marks.ts).
 *
 * WAL puts are also split by whether a delete (a checkpoint's cleanup) was
 * in flight at any point while they ran, to show what deletes cost them.
 *
 * Overlap of WAL puts with the process's own work: batches per WAL object,
 * the share of the timed wall time with at least one WAL put in flight, the
 * most WAL puts in flight at once, and the event loop's utilization (the
 * share of the time the main thread was busy). Many runs in flight whose
 * steps all land in one object per round (batches per object near CONC,
 * one put in flight at most, utilization well under 100%) move in
 * lockstep: a round's CPU, then its put, never both at once.
 *
 * Env: N_RUNS (30), N_STEPS (10), FS_TRIPS (0 stops counting thread-pool
 * requests, whose hook slows every promise: for timings), CONC (runs in flight, 1; the timeline is
 * printed only for 1), FLUSH_MS (engine flush window; default the engine's).
 */
import { createHook } from "node:async_hooks";
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { open, readdir } from "node:fs/promises";
import { join } from "node:path";
import { loadavg } from "node:os";
import * as T from "../runtime/index.js";
import { LocalStore, Queue, StepOutcome, type StepRunner } from "../runtime/index.js";
import { QueueCore } from "../runtime/queue/queue-core.js";
import type { ListOptions, ListedObject, PutOptions } from "../runtime/store/object-store.js";
import { percentile } from "./support/percentile.js";
import { markPutThread, nowMs } from "./support/put-thread-marks.js";
import { runtimeWorkload } from "./support/step-workload.js";
import { withTempDir } from "./support/temp-dir.js";

const N_RUNS = Number(process.env.N_RUNS ?? 30);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const CONC = Number(process.env.CONC ?? 1);
const FLUSH_MS = process.env.FLUSH_MS === undefined ? undefined : Number(process.env.FLUSH_MS);

interface Ev {
  t: number;
  what: string;
}
let events: Ev[] | undefined;
const mark = (what: string) => events?.push({ t: nowMs(), what });
const counts = { puts: 0, gets: 0, lists: 0, deletes: 0, commits: 0, durableCommits: 0, fsReqs: 0, fsyncs: 0, threadPuts: 0, threadFsyncs: 0 };
const thread = markPutThread();
/** Adds the put thread's puts and fsyncs since the last call to `counts`. */
let threadSeen = 0;
function countThread(): void {
  const { marks } = thread.since(threadSeen);
  threadSeen += marks.length;
  for (const m of marks) {
    if (m.kind === "threadWoke") counts.threadPuts++;
    else if (m.kind === "threadSynced") counts.threadFsyncs++;
  }
}
const fsTypes = new Map<string, number>();

// Every fs promise request is one trip to the thread pool. The hook also sees
// every promise, which slows the process: FS_TRIPS=0 leaves it out for timing.
if (process.env.FS_TRIPS !== "0") {
  createHook({
    init(_id, type) {
      if (type.startsWith("FSREQ")) {
        counts.fsReqs++;
        fsTypes.set(type, (fsTypes.get(type) ?? 0) + 1);
      }
    },
  }).enable();
}

// fsync and fdatasync calls (a put's O_DSYNC write is a sync too, counted with the puts).
{
  const probe = await open(process.execPath, "r");
  const proto = Object.getPrototypeOf(probe) as { sync(): Promise<void>; datasync(): Promise<void> };
  await probe.close();
  for (const name of ["sync", "datasync"] as const) {
    const original = proto[name];
    proto[name] = function (this: unknown) {
      counts.fsyncs++;
      return original.call(this);
    };
  }
  // Descriptor fsyncs through the callback API (LocalStore's put), seen by ESM importers once synced.
  const fsModule = fs as unknown as { fsync: typeof fs.fsync; fdatasync: typeof fs.fdatasync };
  for (const name of ["fsync", "fdatasync"] as const) {
    const original = fsModule[name];
    fsModule[name] = ((...args: Parameters<typeof fs.fsync>) => {
      counts.fsyncs++;
      return original(...args);
    }) as typeof fs.fsync;
  }
  syncBuiltinESMExports();
}

/** Folders under `dir`, all depths. */
async function countFolders(dir: string): Promise<number> {
  let n = 0;
  for (const d of await readdir(dir, { withFileTypes: true })) if (d.isDirectory()) n += 1 + (await countFolders(join(dir, d.name)));
  return n;
}

/** WAL put durations, by whether a delete ran at any point during the put. */
const walPutMs = { overlapped: [] as number[], alone: [] as number[] };
/** Start and end of every WAL put, for the overlap figures. */
const walPutSpans: [number, number][] = [];
let deletesRunning = 0;
let deletesStarted = 0;

/** Share of [start, end] with at least one span open, and the most spans open at once. */
function putOverlap(spans: readonly [number, number][], start: number, end: number): { busyShare: number; most: number } {
  const edges = spans.flatMap(([a, b]): [number, number][] => [
    [a, 1],
    [b, -1],
  ]);
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let most = 0;
  let busy = 0;
  let last = start;
  for (const [t, d] of edges) {
    if (open > 0) busy += t - last;
    open += d;
    most = Math.max(most, open);
    last = t;
  }
  return { busyShare: end > start ? busy / (end - start) : 0, most };
}

class TracedStore extends LocalStore {
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    counts.puts++;
    mark(`put ${key} start`);
    const t = performance.now();
    const overlappedAtStart = deletesRunning > 0;
    const startedBefore = deletesStarted;
    try {
      return await super.put(key, body, opts);
    } finally {
      mark(`put ${key} done`);
      if (key.includes("wal/")) {
        const overlapped = overlappedAtStart || deletesStarted > startedBefore;
        walPutMs[overlapped ? "overlapped" : "alone"].push(performance.now() - t);
        walPutSpans.push([t, performance.now()]);
      }
    }
  }
  override async get(key: string) {
    counts.gets++;
    mark(`get ${key}`);
    return super.get(key);
  }
  override async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    counts.lists++;
    mark(`list ${prefix}`);
    yield* super.list(prefix, opts);
  }
  override async delete(key: string): Promise<void> {
    counts.deletes++;
    mark(`delete ${key}`);
    deletesRunning++;
    deletesStarted++;
    try {
      return await super.delete(key);
    } finally {
      deletesRunning--;
    }
  }
}

const commit = QueueCore.prototype.commit;
QueueCore.prototype.commit = function (this: QueueCore, txn, durable, createdClaimed) {
  counts.commits++;
  if (durable) counts.durableCommits++;
  const n = counts.commits;
  const p = commit.call(this, txn, durable, createdClaimed);
  mark(`commit #${n} ${durable ? "durable" : "background"} (${txn.batch.ops.length} ops)`);
  if (durable)
    void p.then(
      () => mark(`commit #${n} durable`),
      () => undefined,
    );
  return p;
};

const runner: StepRunner = {
  async runStep(s) {
    mark(`step ${s.stepNumber} runs`);
    return s.stepNumber + 1 < N_STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
  },
};

await withTempDir("bench-step-trace-", async (dir) => {
  const store = new TracedStore(dir);
  const queue = await Queue.open(store, "bench", FLUSH_MS === undefined ? {} : { flushIntervalMs: FLUSH_MS });
  const w = runtimeWorkload(T, queue, store, runner, new Uint8Array(16).fill(7));
  for (let i = 0; i < 5; i++) await w.one(); // warm-up
  countThread();
  const base = { ...counts };
  walPutMs.overlapped.length = 0;
  walPutMs.alone.length = 0;
  const folders0 = await countFolders(dir);
  const walPuts0 = queue.engineStats.walPuts;
  const walBatches0 = queue.engineStats.walBatches;
  walPutSpans.length = 0;
  const elu0 = performance.eventLoopUtilization();
  const lat: number[] = [];
  let next = 0;
  let lastRunThreadFrom = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      for (let i = next++; i < N_RUNS; i = next++) {
        if (CONC === 1 && i === N_RUNS - 1) {
          events = [];
          lastRunThreadFrom = thread.position();
        }
        const t = performance.now();
        mark("submit");
        await w.one();
        mark("outcome read");
        lat.push(performance.now() - t);
      }
    }),
  );
  const end = performance.now();
  const elapsed = end - start;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  countThread();
  const walPuts = queue.engineStats.walPuts - walPuts0;
  const walBatches = queue.engineStats.walBatches - walBatches0;
  const overlap = putOverlap(walPutSpans, start, end);
  const foldersMade = (await countFolders(dir)) - folders0;
  await w.close();
  const steps = N_RUNS * N_STEPS;
  const per = (k: keyof typeof counts) => ((counts[k] - base[k]) / steps).toFixed(2);
  lat.sort((a, b) => a - b);
  console.log(
    `local-step-trace: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} CONC=${CONC} FLUSH_MS=${FLUSH_MS ?? "default"} load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  console.log(
    `per step: puts ${per("puts")} gets ${per("gets")} lists ${per("lists")} deletes ${per("deletes")} commits ${per("commits")} (durable ${per("durableCommits")}) WAL objects ${(walPuts / steps).toFixed(2)} fsync calls ${per("fsyncs")} main thread, ${per("threadFsyncs")} put thread; puts by the put thread ${per("threadPuts")}; fs requests ${per("fsReqs")} folders made ${(foldersMade / steps).toFixed(3)}`,
  );
  console.log(`CPU (user + system, all threads) ${((cpu.user + cpu.system) / 1000 / steps).toFixed(3)} ms per step`);
  console.log(
    `${Math.round(steps / (elapsed / 1000))} steps/s; fs request types: ${[...fsTypes].map(([k, v]) => `${k} ${(v / steps).toFixed(2)}`).join(", ")} (warm-up included)`,
  );
  console.log(
    `run p50 ${percentile(lat, 50).toFixed(2)} ms (per step ${(percentile(lat, 50) / N_STEPS).toFixed(3)} ms), p99 ${percentile(lat, 99).toFixed(2)} ms`,
  );
  const median = (xs: number[]) =>
    xs.length === 0
      ? "-"
      : percentile(
          xs.sort((a, b) => a - b),
          50,
        ).toFixed(2);
  console.log(
    `WAL batches per object ${walPuts === 0 ? "-" : (walBatches / walPuts).toFixed(1)}; a WAL put in flight ${(overlap.busyShare * 100).toFixed(0)}% of the time, at most ${overlap.most} at once; event loop busy ${(elu.utilization * 100).toFixed(0)}%`,
  );
  console.log(
    `WAL puts: ${walPutMs.overlapped.length} overlapped a delete (p50 ${median(walPutMs.overlapped)} ms), ${walPutMs.alone.length} did not (p50 ${median(walPutMs.alone)} ms)`,
  );
  if (events === undefined) return;
  // The put thread's marks of the last run, on the same clock.
  for (const m of thread.since(lastRunThreadFrom).marks) events.push({ t: m.t, what: `  put thread: ${m.kind.replace(/^thread/, "").toLowerCase()}` });
  events.sort((a, b) => a.t - b.t);
  console.log("timeline of the last run (ms since submit):");
  const t0 = events![0]!.t;
  for (const e of events!) console.log(`  ${(e.t - t0).toFixed(3).padStart(8)}  ${e.what}`);
});
