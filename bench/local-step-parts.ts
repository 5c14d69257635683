/**
 * @module Where a step's wall time goes one run at a time on a LocalStore,
 * over every timed step rather than one run's timeline: from a step's start
 * (the runner called) to the next step's start, cut at the settlement commit
 * (its call and its return),
 * the WAL put's start, the put's file-system calls (the temporary file's
 * create, the `O_DSYNC` write's trip to the thread pool, the link, the
 * directory fsync's trip), the put's end and the commit reported durable.
 * Medians of each part over the steps whose interval held exactly one commit
 * and one put (steps 1 to N_STEPS - 1 of each run; step 0 follows the run's
 * submission, which has its own put). Also CPU per step (the process, all
 * threads) and the main thread's busy share.
 *
 * The fs calls are timed by wrapping node:fs for the whole process, which
 * costs a little CPU per call; the parts' sum is the step's wall time.
 *
 * Env: N_RUNS (60), N_STEPS (10), WARM_RUNS (20, untimed first).
 * Usage: `npx tsx bench/local-step-parts.ts`.
 */
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { Engine } from "../runtime/engine/engine.js";
import * as T from "../runtime/index.js";
import { LocalStore, Queue, StepOutcome, type StepRunner } from "../runtime/index.js";
import type { PutOptions } from "../runtime/store/object-store.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";
import { runtimeWorkload } from "./support/step-workload.js";
import { withTempDir } from "./support/temp-dir.js";

const N_RUNS = Number(process.env.N_RUNS ?? 60);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const WARM_RUNS = Number(process.env.WARM_RUNS ?? 20);

/** What happened, in the order one regular step's interval holds them. */
const KINDS = ["step", "commit", "committed", "putStart", "created", "writeBack", "linked", "fsyncIssued", "fsyncBack", "putDone", "durable"] as const;
type Kind = (typeof KINDS)[number];
const PARTS: [Kind, Kind, string][] = [
  ["step", "commit", "runner to settlement commit"],
  ["commit", "committed", "engine commit call (synchronous part)"],
  ["committed", "putStart", "commit returned to WAL put issued"],
  ["putStart", "created", "put: to temporary file created"],
  ["created", "writeBack", "put: O_DSYNC write (thread-pool trip)"],
  ["writeBack", "linked", "put: back on main thread to linked"],
  ["linked", "fsyncIssued", "put: linked to directory fsync issued (close, unlink, open)"],
  ["fsyncIssued", "fsyncBack", "put: directory fsync (thread-pool trip)"],
  ["fsyncBack", "putDone", "put: back on main thread to put resolved"],
  ["putDone", "durable", "put resolved to commit durable"],
  ["durable", "step", "commit durable to next step's runner"],
];

let recording = false;
/** `first`: a run's first step (its interval from the previous step holds the run's submission). */
const events: { t: number; kind: Kind; first?: boolean }[] = [];
const mark = (kind: Kind) => {
  if (recording) events.push({ t: performance.now(), kind });
};

// The put's calls, seen through node:fs (LocalStore's namespace import follows once synced).
{
  const f = fs as unknown as Record<string, (...args: unknown[]) => unknown>;
  const openSync = f.openSync!;
  f.openSync = (...args: unknown[]) => {
    const fd = openSync(...args);
    if (String(args[0]).includes("%tmp.")) mark("created");
    return fd;
  };
  const linkSync = f.linkSync!;
  f.linkSync = (...args: unknown[]) => {
    const r = linkSync(...args);
    mark("linked");
    return r;
  };
  const write = f.write!;
  f.write = (...args: unknown[]) => {
    const cb = args[args.length - 1] as (...a: unknown[]) => void;
    args[args.length - 1] = (...a: unknown[]) => {
      mark("writeBack");
      cb(...a);
    };
    return write(...args);
  };
  const fsync = f.fsync!;
  f.fsync = (fd: unknown, cb: unknown) => {
    mark("fsyncIssued");
    return fsync(fd, (...a: unknown[]) => {
      mark("fsyncBack");
      (cb as (...a: unknown[]) => void)(...a);
    });
  };
  syncBuiltinESMExports();
}

class MarkedStore extends LocalStore {
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    mark("putStart");
    const r = await super.put(key, body, opts);
    mark("putDone");
    return r;
  }
}

const commit = Engine.prototype.commit;
Engine.prototype.commit = function (this: Engine, batch, opts) {
  const durable = opts?.durable !== false;
  if (durable) mark("commit");
  const p = commit.call(this, batch, opts);
  if (durable) mark("committed");
  if (durable)
    void p.then(
      () => mark("durable"),
      () => undefined,
    );
  return p;
};

const runner: StepRunner = {
  async runStep(s) {
    if (recording) events.push({ t: performance.now(), kind: "step", first: s.stepNumber === 0 });
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
  recording = true;
  // One run at a time; the latencies come back sorted.
  const lat = await w.drive(N_RUNS, 1);
  recording = false;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  await w.close();

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
  console.log(`steps cut: ${regular} regular, ${irregular} other (a checkpoint, a second put or commit in the interval)`);
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
