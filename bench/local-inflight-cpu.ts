/**
 * @module Where the time goes with many runs in flight on a LocalStore: the
 * peer workload (runs of N_STEPS steps that continue at once, CONC in
 * flight), with each thread's CPU and run-queue wait read from
 * /proc/self/task/<tid>/schedstat (nanoseconds, unlike the 10 ms ticks of
 * `stat`) over the timed runs, and the group commit's figures: WAL puts
 * and bytes per put, commits per put, the put's wall time, and the main
 * thread's time idle in the event loop and its context switches (slept,
 * preempted; /proc/self/task/<pid>/status).
 *
 * Threads: the main thread (the process id); those started before the
 * first put (V8's platform workers: garbage collection, compilation); those
 * started after it (the put thread and libuv's pool), each listed, the
 * busiest first (the put thread, as a rule). Linux only.
 *
 * The busiest later thread's user and system CPU come from `stat` (10 ms
 * ticks: rough over one round's hundred puts).
 *
 * Env: N_RUNS (200), N_STEPS (10), CONC (50), ROUNDS (5), WARM_ROUNDS (2);
 * each round on a fresh store, as the peer harness does. COHORTS: a
 * comma-separated list of `walCohorts` settings taken in turn, round by
 * round (warm rounds too), with each setting's medians at the end, so two
 * settings are compared alternating in one process; unset, the engine's
 * default.
 * Usage: `npx tsx bench/local-inflight-cpu.ts`; `COHORTS=1,2 ROUNDS=10 npx tsx bench/local-inflight-cpu.ts`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import * as T from "../runtime/index.js";
import { LocalStore, Queue, StepOutcome, type StepRunner } from "../runtime/index.js";
import type { PutOptions } from "../runtime/store/object-store.js";
import { median, percentile } from "./support/percentile.js";
import { runtimeWorkload } from "./support/step-workload.js";
import { withTempDir } from "./support/temp-dir.js";

const N_RUNS = Number(process.env.N_RUNS ?? 200);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const CONC = Number(process.env.CONC ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const WARM_ROUNDS = Number(process.env.WARM_ROUNDS ?? 2);
const COHORTS: (number | undefined)[] = process.env.COHORTS ? process.env.COHORTS.split(",").map(Number) : [undefined];

/** Clock ticks per second of /proc's `stat` times (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

/** Nanoseconds on a CPU and waiting for one, and user and system ticks, per thread id. */
function schedstats(): Map<number, { run: number; wait: number; user: number; system: number }> {
  const out = new Map<number, { run: number; wait: number; user: number; system: number }>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
      // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(Number(tid), { run: run!, wait: wait!, user: Number(fields[11]), system: Number(fields[12]) });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** The main thread's voluntary (it slept) and involuntary (it was preempted) context switches so far. */
function mainSwitches(): { voluntary: number; involuntary: number } {
  const status = readFileSync(`/proc/self/task/${process.pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s*(\\d+)`, "m").exec(status)?.[1]);
  return { voluntary: field("voluntary_ctxt_switches"), involuntary: field("nonvoluntary_ctxt_switches") };
}

const threadsBeforePuts = new Set(schedstats().keys());
const walPutMs: number[] = [];
class TimedStore extends LocalStore {
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    const t = performance.now();
    try {
      return await super.put(key, body, opts);
    } finally {
      if (key.includes("wal/")) walPutMs.push(performance.now() - t);
    }
  }
}

const runner: StepRunner = {
  async runStep(s) {
    return s.stepNumber + 1 < N_STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
  },
};

const us = (ns: number, steps: number) => (ns / 1000 / steps).toFixed(1);

/** Per setting: steps/s, main thread CPU µs per step, WAL puts per step, of each timed round. */
const figures = new Map<string, { rate: number[]; mainCpu: number[]; puts: number[] }>();

async function round(timed: boolean, cohorts: number | undefined): Promise<void> {
  await withTempDir("bench-inflight-cpu-", async (dir) => {
    const store = new TimedStore(dir);
    const queue = await Queue.open(store, "bench", cohorts === undefined ? {} : { engineOptions: { walCohorts: cohorts } });
    const w = runtimeWorkload(T, queue, store, runner, new Uint8Array(16).fill(7));
    for (let i = 0; i < 10; i++) await w.one();
    const stats0 = queue.engineStats;
    walPutMs.length = 0;
    const s0 = schedstats();
    const sw0 = mainSwitches();
    const elu0 = performance.eventLoopUtilization();
    const start = performance.now();
    await w.drive(N_RUNS, CONC);
    const wall = performance.now() - start;
    const elu = performance.eventLoopUtilization(elu0);
    const s1 = schedstats();
    const sw1 = mainSwitches();
    const stats1 = queue.engineStats;
    await w.close();
    if (!timed) return;
    const steps = N_RUNS * N_STEPS;
    const puts = stats1.walPuts - stats0.walPuts;
    const delta = (tid: number) => {
      const a = s0.get(tid) ?? { run: 0, wait: 0, user: 0, system: 0 };
      const b = s1.get(tid) ?? a;
      return { run: b.run - a.run, wait: b.wait - a.wait, user: b.user - a.user, system: b.system - a.system };
    };
    const main = delta(process.pid);
    let platform = { run: 0, wait: 0 };
    const later: { tid: number; run: number; wait: number; user: number; system: number }[] = [];
    for (const tid of s1.keys()) {
      if (tid === process.pid) continue;
      const d = delta(tid);
      if (threadsBeforePuts.has(tid)) platform = { run: platform.run + d.run, wait: platform.wait + d.wait };
      else if (d.run > 0) later.push({ tid, ...d });
    }
    later.sort((a, b) => b.run - a.run);
    walPutMs.sort((a, b) => a - b);
    const setting = cohorts === undefined ? "default" : `walCohorts ${cohorts}`;
    const f = figures.get(setting) ?? { rate: [], mainCpu: [], puts: [] };
    figures.set(setting, f);
    f.rate.push(steps / (wall / 1000));
    f.mainCpu.push(main.run / 1000 / steps);
    f.puts.push(puts / steps);
    console.log(
      `${setting}, load ${loadavg()[0]!.toFixed(2)}: ${Math.round(steps / (wall / 1000))} steps/s; WAL puts/step ${(puts / steps).toFixed(4)}, commits (WAL batches)/put ${((stats1.walBatches - stats0.walBatches) / puts).toFixed(1)}, bytes/put ${Math.round((stats1.walBytes - stats0.walBytes) / puts)}, put p50 ${percentile(walPutMs, 50).toFixed(3)} ms p90 ${percentile(walPutMs, 90).toFixed(3)} ms`,
    );
    console.log(
      `  µs per step, CPU (run-queue wait): main ${us(main.run, steps)} (${us(main.wait, steps)}), main idle ${us(elu.idle * 1e6, steps)}, main context switches per 100 steps ${(((sw1.voluntary - sw0.voluntary) * 100) / steps).toFixed(2)} slept, ${(((sw1.involuntary - sw0.involuntary) * 100) / steps).toFixed(2)} preempted; V8 platform threads ${us(platform.run, steps)} (${us(platform.wait, steps)}); later threads ${later
        .map((t) => `${us(t.run, steps)} (${us(t.wait, steps)})`)
        .join(
          ", ",
        )}; busiest later thread per put ${later.length === 0 ? "-" : (later[0]!.run / 1000 / puts).toFixed(0)} µs (user ${later.length === 0 ? "-" : ((later[0]!.user * 1e6) / TICKS_PER_S / puts).toFixed(0)}, system ${later.length === 0 ? "-" : ((later[0]!.system * 1e6) / TICKS_PER_S / puts).toFixed(0)} µs, in ticks of 10 ms)`,
    );
  });
}

console.log(
  `local-inflight-cpu: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} CONC=${CONC} ROUNDS=${ROUNDS} WARM_ROUNDS=${WARM_ROUNDS} COHORTS=${process.env.COHORTS ?? "(default)"}`,
);
for (let i = 0; i < WARM_ROUNDS; i++) await round(false, COHORTS[i % COHORTS.length]);
for (let i = 0; i < ROUNDS; i++) await round(true, COHORTS[i % COHORTS.length]);
for (const [setting, f] of figures) {
  console.log(
    `${setting}: median of ${f.rate.length} rounds ${Math.round(median(f.rate))} steps/s (rounds ${f.rate.map(Math.round).join(", ")}); main CPU ${median(f.mainCpu).toFixed(1)} µs/step; WAL puts/step ${median(f.puts).toFixed(4)}`,
  );
}
