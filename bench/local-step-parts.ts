/**
 * @module Where a step's wall time goes one run at a time on a LocalStore,
 * over every timed step rather than one run's timeline: from a step's start
 * (the runner called) to the next step's start, cut at the queue's
 * settlement commit (its call and its return), the WAL put's start, the
 * put thread's work (picking the put up, the `O_DSYNC` write, the link, the
 * directory fsync: marked from inside the thread, see
 * support/put-thread-marks.ts), the put's end on the main thread and the
 * commit reported durable. Medians of each part over the steps whose
 * interval held exactly one commit and one put made by the put thread
 * (steps 1 to N_STEPS - 1 of each run; step 0 follows the run's submission,
 * which has its own put). Also CPU per step (the process, all threads) and
 * the main thread's busy share.
 *
 * The marks cost a little CPU per call; the parts' sum is the step's wall
 * time. A put the thread could not take (busy, or a body over its limit)
 * goes through the thread pool and leaves its step out, counted.
 *
 * Env: N_RUNS (60), N_STEPS (10), WARM_RUNS (20, untimed first).
 * Usage: `npx tsx bench/local-step-parts.ts`.
 */
import * as T from "../runtime/index.js";
import { LocalStore, Queue, StepOutcome, type StepRunner } from "../runtime/index.js";
import { QueueCore } from "../runtime/queue/queue-core.js";
import type { PutOptions } from "../runtime/store/object-store.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";
import { markPutThread, nowMs } from "./support/put-thread-marks.js";
import { runtimeWorkload } from "./support/step-workload.js";
import { withTempDir } from "./support/temp-dir.js";

const N_RUNS = Number(process.env.N_RUNS ?? 60);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const WARM_RUNS = Number(process.env.WARM_RUNS ?? 20);

/** What happened, in the order one regular step's interval holds them. */
const KINDS = ["step", "commit", "committed", "putStart", "threadWoke", "threadWritten", "threadLinked", "threadSynced", "putDone", "durable"] as const;
type Kind = (typeof KINDS)[number];
const PARTS: [Kind, Kind, string][] = [
  ["step", "commit", "runner to settlement commit"],
  ["commit", "committed", "queue commit call (synchronous part)"],
  ["committed", "putStart", "commit returned to WAL put issued"],
  ["putStart", "threadWoke", "put: to the put thread picking it up"],
  ["threadWoke", "threadWritten", "put thread: O_DSYNC write (with the create, unless made ahead)"],
  ["threadWritten", "threadLinked", "put thread: stat and link"],
  ["threadLinked", "threadSynced", "put thread: directory open and fsync"],
  ["threadSynced", "putDone", "put: answer to put resolved on the main thread"],
  ["putDone", "durable", "put resolved to commit durable"],
  ["durable", "step", "commit durable to next step's runner"],
];

let recording = false;
/** `first`: a run's first step (its interval from the previous step holds the run's submission). */
const events: { t: number; kind: Kind; first?: boolean }[] = [];
const mark = (kind: Kind) => {
  if (recording) events.push({ t: nowMs(), kind });
};
const thread = markPutThread();

class MarkedStore extends LocalStore {
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    mark("putStart");
    const r = await super.put(key, body, opts);
    mark("putDone");
    return r;
  }
}

// Every commit of the queue (a settlement's among them) goes through here, not through Engine.prototype.commit.
const commit = QueueCore.prototype.commit;
QueueCore.prototype.commit = function (this: QueueCore, txn, durable, createdClaimed) {
  if (durable) mark("commit");
  const p = commit.call(this, txn, durable, createdClaimed);
  if (durable) {
    mark("committed");
    void p.then(
      () => mark("durable"),
      () => undefined,
    );
  }
  return p;
};

const runner: StepRunner = {
  async runStep(s) {
    if (recording) events.push({ t: nowMs(), kind: "step", first: s.stepNumber === 0 });
    return s.stepNumber + 1 < N_STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
  },
};

await withTempDir("bench-step-parts-", async (dir) => {
  const store = new MarkedStore(dir);
  const w = runtimeWorkload(T, await Queue.open(store, "bench"), store, runner, new Uint8Array(16).fill(7));
  console.log(`local-step-parts: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} WARM_RUNS=${WARM_RUNS} load ${loadAverageText()}`);
  for (let i = 0; i < WARM_RUNS; i++) await w.one();
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const threadFrom = thread.position();
  recording = true;
  // One run at a time; the latencies come back sorted.
  const lat = await w.drive(N_RUNS, 1);
  recording = false;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  const fromThread = thread.since(threadFrom);
  await w.close();
  for (const m of fromThread.marks) events.push({ t: m.t, kind: m.kind });
  events.sort((a, b) => a.t - b.t);
  const threadPuts = fromThread.marks.filter((m) => m.kind === "threadWoke").length;
  const allPuts = events.filter((e) => e.kind === "putStart").length;

  // Cut the events at each step's start; keep intervals that end at a next step of the same run and hold one of each kind.
  const parts = new Map<string, number[]>(PARTS.map(([, , name]) => [name, []]));
  const whole: number[] = [];
  let regular = 0;
  let irregular = 0;
  const starts = events.flatMap((e, i) => (e.kind === "step" ? [i] : []));
  for (let s = 0; s + 1 < starts.length; s++) {
    const from = starts[s]!;
    const to = starts[s + 1]!;
    if (events[to]!.first) continue; // the next run's first step: a submission lies between
    const inside = events.slice(from, to + 1);
    const at = new Map<Kind, number>();
    let ok = inside.length === KINDS.length + 1;
    inside.slice(0, -1).forEach((e, i) => {
      if (e.kind !== KINDS[i]) ok = false;
      at.set(e.kind, e.t);
    });
    if (!ok) {
      irregular++;
      continue;
    }
    regular++;
    const end = inside[inside.length - 1]!.t;
    whole.push(end - inside[0]!.t);
    for (const [a, b, name] of PARTS) parts.get(name)!.push((b === "step" ? end : at.get(b)!) - at.get(a)!);
  }
  const med = (xs: number[]) =>
    percentile(
      [...xs].sort((x, y) => x - y),
      50,
    );
  const steps = N_RUNS * N_STEPS;
  console.log(
    `run p50 ${percentile(lat, 50).toFixed(2)} ms (per step ${(percentile(lat, 50) / N_STEPS).toFixed(3)} ms); CPU ${((cpu.user + cpu.system) / 1000 / steps).toFixed(3)} ms per step (user ${(cpu.user / 1000 / steps).toFixed(3)}, system ${(cpu.system / 1000 / steps).toFixed(3)}); main thread busy ${(elu.utilization * 100).toFixed(0)}%`,
  );
  console.log(
    `steps cut: ${regular} regular, ${irregular} other (a checkpoint, a second put or commit in the interval, a put through the thread pool); puts ${allPuts}, of them by the put thread ${threadPuts}${fromThread.dropped > 0 ? `; ${fromThread.dropped} thread marks dropped` : ""}`,
  );
  console.log("| part | median ms | p90 ms |");
  console.log("|---|---|---|");
  for (const [, , name] of PARTS) {
    const xs = parts.get(name)!.sort((a, b) => a - b);
    console.log(`| ${name} | ${med(xs).toFixed(3)} | ${percentile(xs, 90).toFixed(3)} |`);
  }
  console.log(
    `| step start to next step start | ${med(whole).toFixed(3)} | ${percentile(
      [...whole].sort((a, b) => a - b),
      90,
    ).toFixed(3)} |`,
  );
  console.log(`load at end ${loadAverageText()}`);
});
