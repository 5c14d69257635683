/**
 * @module The WAL cohort split in the side-by-side's shape, counted: each
 * process runs the peer harness's throughput windows (a fresh LocalStore
 * per window, 10 untimed runs 10 at a time, then N_TP runs of 10 no-op
 * steps with CONC in flight, each run `submit`, `wait`, `outcome` on a
 * runtime with `maxConcurrentSteps(64)`, a 120 s timer per run as the
 * harness arms), WARMUPS windows discarded, then REPEATS measured; steps/s
 * is their median, as the side-by-side reports it.
 *
 * Per window, counts that do not depend on the machine's load: WAL puts
 * per step, commits per put, how the commits of consecutive puts split
 * (the smaller of two neighbours over the larger: 1 an even split, near 0
 * lock step with an extra small put), early seals (a cohort's share
 * reached), windows that ended waiting for a landing, and the last wave's
 * size at landings (how many of them were too small to split); and with
 * them the share of wall time with a put in flight, the event loop's idle
 * time while one is, and the main thread's CPU per step (Linux schedstat).
 * The window's timeline in three phases (ramp until the first run ends,
 * steady until the last run is submitted, tail until the last ends): steps,
 * WAL puts, commits per put, puts in flight, the loop's idle time with a put
 * in flight; and the CPU of the process's threads by kind (main, V8's
 * platform workers, the put thread with libuv's pool).
 *
 * Parent (default): alternates child processes of settings A and B
 * (`SETTINGS`, comma-separated: `default` opens the engine without
 * `walCohorts`, which is 1, a number sets it), the order reversed every
 * other pair, and
 * prints each process's median and windows, then the medians per setting,
 * each window's figures (the median over the processes) phase by phase, and
 * last the deciding figure: the median over the pairs of the second
 * setting's process median over the first's, and the pairs it won.
 * The side-by-side's figure for LocalStore is one such process's median.
 *
 * Usage: `npx tsx bench/cohort-windows.ts`. Env: SETTINGS (1,2), PAIRS (4), WARMUPS (4), REPEATS (3),
 * N_TP (200), CONC (50), VERBOSE (0; 1 prints every window's counts), DIR (the stores' parent directory; the
 * system's temporary directory unless set: a tmpfs there makes puts short beside the wave's CPU, as a quiet
 * machine's fast disk would).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as T from "../runtime/index.js";
import { CohortSeal } from "../runtime/engine/wal-cohorts.js";
import { WalWriter } from "../runtime/engine/wal-writer.js";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";
import { WalPutWindows } from "./support/wal-put-windows.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const SETTINGS = (process.env.SETTINGS ?? "1,2").split(",");
const PAIRS = env("PAIRS", 4);
const WARMUPS = env("WARMUPS", 4);
const REPEATS = env("REPEATS", 3);
const N_TP = env("N_TP", 200);
const CONC = env("CONC", 50);
const M = 10;
const VERBOSE = process.env.VERBOSE === "1";
/** The pairs' median ratio a second setting must reach (with three pairs in four won) to take the default: the side-by-side's own passes spread by more than a few per cent. */
const DECIDES_AT = 1.05;

interface WindowRow {
  stepsPerSec: number;
  putsPerStep: number;
  commitsPerPut: number;
  /** Median over consecutive puts of min/max of their commits. */
  evenness: number;
  /** Share of puts whose object held under a third of its neighbour's commits. */
  lopsided: number;
  earlySealsPerPut: number;
  heldForLandingPerPut: number;
  /** Share of landings whose wave was under 2 * MIN_COHORT_COMMITS (no split possible at 2 cohorts). */
  smallWaves: number;
  waveP50: number;
  /** Share of landings after which two cohorts were in force (0 or 1: the setting is fixed). */
  splitLandings: number;
  inFlightShare: number;
  idleInFlightUs: number;
  besidePerPut: number;
  cpuUs: number;
  /** The window's timeline in three phases (see `PHASE_NAMES`). */
  phases: PhaseRow[];
  /** CPU per step of the process's threads, by the kernel's thread name (the main thread as `main`), µs. */
  threadsUs: Record<string, number>;
}

/**
 * The three phases of a window: `ramp` from the first submit until the first run ends (all CONC runs start
 * together, in step), `steady` until the last run is submitted (every end submits the next run, CONC in
 * flight), `tail` until the last run ends (fewer in flight with each end).
 */
const PHASE_NAMES = ["ramp", "steady", "tail"] as const;

interface PhaseRow {
  ms: number;
  /** Steps whose runner returned in the phase. */
  steps: number;
  /** WAL puts that started in the phase. */
  puts: number;
  /** Commits sealed into WAL objects in the phase. */
  commits: number;
  /** WAL puts in flight, averaged over the phase's wall time. */
  inFlight: number;
  /** The event loop's idle time with a WAL put in flight (nothing to run but the put to wait for), ms. */
  idleInFlightMs: number;
  /** The event loop's idle time in all, ms. */
  idleMs: number;
}

// ---- the timeline of a window (child only): stamps taken while `seen.on` ----
const idleNow = () => performance.eventLoopUtilization().idle;
const timeline = {
  runStarts: [] as [number, number][],
  runEnds: [] as [number, number][],
  stepEnds: [] as number[],
  seals: [] as [number, number][],
  puts: [] as [number, number][],
  /** Intervals with a WAL put in flight: start, end, the loop's idle time within. */
  inFlight: [] as [number, number, number][],
  open: 0,
  openAt: 0,
  openIdle: 0,
};

function overlap(a0: number, a1: number, b0: number, b1: number): number {
  return Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));
}

function phasesOf(t0: number, t1: number, idle0: number, idle1: number): PhaseRow[] {
  const tl = timeline;
  const firstEnd = tl.runEnds.reduce((m, e) => (e[0] < m[0] ? e : m), [t1, idle1] as [number, number]);
  const lastStart = tl.runStarts.reduce((m, e) => (e[0] > m[0] ? e : m), [t0, idle0] as [number, number]);
  const ramp = firstEnd;
  const tail = lastStart[0] < ramp[0] ? ramp : lastStart;
  const bounds: [number, number][] = [[t0, idle0], ramp, tail, [t1, idle1]];
  return PHASE_NAMES.map((_, i) => {
    const [a, ia] = bounds[i]!;
    const [b, ib] = bounds[i + 1]!;
    const inside = (t: number) => t >= a && (t < b || (i === PHASE_NAMES.length - 1 && t <= b));
    const ms = b - a;
    let putMs = 0;
    for (const [s, e] of tl.puts) putMs += overlap(s, e, a, b);
    let idleInFlight = 0;
    for (const [s, e, idle] of tl.inFlight) idleInFlight += e > s ? (idle * overlap(s, e, a, b)) / (e - s) : 0;
    return {
      ms,
      steps: tl.stepEnds.filter(inside).length,
      puts: tl.puts.filter(([s]) => inside(s)).length,
      commits: tl.seals.filter(([t]) => inside(t)).reduce((n, [, c]) => n + c, 0),
      inFlight: ms > 0 ? putMs / ms : 0,
      idleInFlightMs: idleInFlight,
      idleMs: ib - ia,
    };
  });
}

/** Each thread's time on a core, ns, by `<tid>`, with its name. */
function threadRuns(): Map<string, { name: string; ns: number }> {
  const out = new Map<string, { name: string; ns: number }>();
  for (const t of readdirSync("/proc/self/task")) {
    try {
      const name = t === String(process.pid) ? "main" : readFileSync(`/proc/self/task/${t}/comm`, "utf8").trim();
      out.set(t, { name, ns: Number(readFileSync(`/proc/self/task/${t}/schedstat`, "utf8").split(" ")[0]) });
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return out;
}

/** The threads alive before any store was opened: V8's platform workers (compiler, collector helpers) and Node's own. */
const startupThreads = new Set(readdirSync("/proc/self/task"));

/**
 * CPU per step of the window's threads by kind: the main thread; V8's platform workers (concurrent compiles,
 * concurrent marking and parallel scavenges; alive from start-up, before any store); the threads started
 * since (LocalStore's put thread, which the process's stores share, and libuv's pool).
 */
function threadsUsPerStep(
  before: Map<string, { name: string; ns: number }>,
  after: Map<string, { name: string; ns: number }>,
  steps: number,
): Record<string, number> {
  const by: Record<string, number> = { main: 0, "V8 platform": 0, "put thread and pool": 0 };
  for (const [tid, { name, ns }] of after) {
    const kind = name === "main" ? "main" : startupThreads.has(tid) ? "V8 platform" : "put thread and pool";
    by[kind] = by[kind]! + (ns - (before.get(tid)?.ns ?? 0)) / 1000 / steps;
  }
  return by;
}

// ---- counting hooks (child only) ----
const walPuts = new WalPutWindows();
const seen = {
  on: false,
  sealSizes: [] as number[],
  early: 0,
  held: 0,
  waves: [] as number[],
  split: 0,
};

function hook(): void {
  walPuts.wrap(T.LocalStore.prototype);
  // Outside the counter above, so its own wrapper's time falls inside: each WAL put's start and end, and the
  // intervals with one in flight with the loop's idle time within.
  const put = T.LocalStore.prototype.put;
  T.LocalStore.prototype.put = async function (this: T.LocalStore, key: string, body: Uint8Array, opts?: T.PutOptions) {
    if (!seen.on || opts?.ifNoneMatch !== "*") return put.call(this, key, body, opts);
    const tl = timeline;
    const s = performance.now();
    if (tl.open++ === 0) {
      tl.openAt = s;
      tl.openIdle = idleNow();
    }
    try {
      return await put.call(this, key, body, opts);
    } finally {
      const e = performance.now();
      tl.puts.push([s, e]);
      if (--tl.open === 0) tl.inFlight.push([tl.openAt, e, idleNow() - tl.openIdle]);
    }
  };
  const seal = WalWriter.prototype.seal;
  WalWriter.prototype.seal = function (this: WalWriter) {
    const before = this.stats.batches;
    const seq = seal.call(this);
    if (seen.on && this.stats.batches > before) {
      seen.sealSizes.push(this.stats.batches - before);
      timeline.seals.push([performance.now(), this.stats.batches - before]);
    }
    return seq;
  };
  const sealsEarly = CohortSeal.prototype.sealsEarly;
  CohortSeal.prototype.sealsEarly = function (this: CohortSeal, gathered: number, ahead: number) {
    const r = sealsEarly.call(this, gathered, ahead);
    if (r && seen.on) seen.early++;
    return r;
  };
  const waits = CohortSeal.prototype.waitsForLanding;
  CohortSeal.prototype.waitsForLanding = function (this: CohortSeal, ahead: number) {
    const r = waits.call(this, ahead);
    if (r && seen.on) seen.held++;
    return r;
  };
  const landing = CohortSeal.prototype.noteLanding;
  CohortSeal.prototype.noteLanding = function (this: CohortSeal, durable: number, gathered: number, ahead: number) {
    landing.call(this, durable, gathered, ahead);
    if (seen.on) {
      seen.waves.push(durable + gathered + ahead);
      if (this.cohorts > 1) seen.split++;
    }
  };
}

function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

const enc = (s: string) => new TextEncoder().encode(s);
const runner: T.StepRunner = {
  async runStep(step) {
    const [j, m] = new TextDecoder().decode(step.payload).split("/").map(Number) as [number, number];
    if (seen.on) timeline.stepEnds.push(performance.now());
    return j + 1 >= m ? T.StepOutcome.succeed(enc(String(m))) : T.StepOutcome.continueNow(enc(`${j + 1}/${m}`));
  },
};

async function window(cohorts: number | undefined): Promise<WindowRow> {
  const dir = mkdtempSync(join(process.env.DIR ?? tmpdir(), "bench-cohort-windows-"));
  const store = new T.LocalStore(dir);
  const queue = await T.Queue.open(store, "bench", cohorts === undefined ? undefined : { engineOptions: { walCohorts: cohorts } });
  const runtime = T.WorkflowRuntime.builder(queue, store, runner, T.NoopTerminalHook).maxConcurrentSteps(64).build();
  const handle = runtime.spawn();
  const run = async () => {
    let timer: NodeJS.Timeout | undefined;
    if (seen.on) timeline.runStarts.push([performance.now(), idleNow()]);
    const one = (async () => {
      const { runId } = await runtime.submit({ input: enc(`0/${M}`) });
      await runtime.wait(runId);
      const o = await runtime.outcome(runId);
      if (o?.status !== "succeeded") throw new Error(`run ${runId} did not succeed`);
      if (seen.on) timeline.runEnds.push([performance.now(), idleNow()]);
    })();
    // The harness races every run against a 120 s timer.
    await Promise.race([one.finally(() => clearTimeout(timer)), new Promise((_, rej) => (timer = setTimeout(() => rej(new Error("timeout")), 120_000)))]);
  };
  const drive = async (n: number, conc: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(conc, n) }, async () => {
        while (next++ < n) await run();
      }),
    );
  };
  let row: WindowRow;
  let threads0 = new Map<string, { name: string; ns: number }>();
  let threadsAfter = threads0;
  try {
    await drive(10, 10);
    Object.assign(seen, { on: true, sealSizes: [], early: 0, held: 0, waves: [], split: 0 });
    Object.assign(timeline, { runStarts: [], runEnds: [], stepEnds: [], seals: [], puts: [], inFlight: [], open: 0 });
    walPuts.start();
    threads0 = threadRuns();
    const cpu0 = mainThreadNs();
    const idle0 = idleNow();
    const t0 = performance.now();
    await drive(N_TP, CONC);
    const t1 = performance.now();
    const wall = t1 - t0;
    const idle1 = idleNow();
    const cpu = mainThreadNs() - cpu0;
    threadsAfter = threadRuns();
    seen.on = false;
    walPuts.on = false;
    const steps = N_TP * M;
    const sizes = seen.sealSizes;
    const ratios: number[] = [];
    let lopsided = 0;
    for (let i = 1; i < sizes.length; i++) {
      const r = Math.min(sizes[i]!, sizes[i - 1]!) / Math.max(sizes[i]!, sizes[i - 1]!);
      ratios.push(r);
      if (r < 1 / 3) lopsided++;
    }
    const commits = sizes.reduce((a, b) => a + b, 0);
    row = {
      stepsPerSec: steps / (wall / 1000),
      putsPerStep: walPuts.puts / steps,
      commitsPerPut: commits / Math.max(1, sizes.length),
      evenness: ratios.length > 0 ? median(ratios) : 1,
      lopsided: lopsided / Math.max(1, ratios.length),
      earlySealsPerPut: seen.early / Math.max(1, walPuts.puts),
      heldForLandingPerPut: seen.held / Math.max(1, walPuts.puts),
      smallWaves: seen.waves.filter((w) => w < 32).length / Math.max(1, seen.waves.length),
      waveP50: seen.waves.length > 0 ? median(seen.waves) : 0,
      splitLandings: seen.split / Math.max(1, seen.waves.length),
      inFlightShare: walPuts.inFlightMs / wall,
      idleInFlightUs: (walPuts.idleInFlightMs * 1000) / steps,
      besidePerPut: walPuts.beside / Math.max(1, walPuts.puts),
      cpuUs: cpu / 1000 / steps,
      phases: phasesOf(t0, t1, idle0, idle1),
      threadsUs: {},
    };
  } finally {
    await handle.shutdown();
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  }
  row.threadsUs = threadsUsPerStep(threads0, threadsAfter, N_TP * M);
  return row;
}

const fmt = (r: WindowRow) =>
  `${r.stepsPerSec.toFixed(0)} steps/s, puts/step ${r.putsPerStep.toFixed(4)}, commits/put ${r.commitsPerPut.toFixed(1)}, ` +
  `neighbour puts min/max p50 ${r.evenness.toFixed(2)} (under 1/3: ${(100 * r.lopsided).toFixed(0)} %), early seals/put ${r.earlySealsPerPut.toFixed(2)}, ` +
  `held for a landing/put ${r.heldForLandingPerPut.toFixed(2)}, wave p50 ${r.waveP50.toFixed(0)} (under 32: ${(100 * r.smallWaves).toFixed(0)} %), two cohorts after ${(100 * r.splitLandings).toFixed(0)} % of landings, ` +
  `put in flight ${(100 * r.inFlightShare).toFixed(0)} %, idle with a put in flight ${r.idleInFlightUs.toFixed(1)} µs/step, beside ${(100 * r.besidePerPut).toFixed(0)} %, main CPU ${r.cpuUs.toFixed(1)} µs/step`;

/** Medians field by field; a phase's and a thread's figures too. */
const medianRow = (rows: WindowRow[]): WindowRow => {
  const keys = (Object.keys(rows[0]!) as (keyof WindowRow)[]).filter((k) => k !== "phases" && k !== "threadsUs");
  const row = Object.fromEntries(keys.map((k) => [k, median(rows.map((r) => r[k] as number))])) as unknown as WindowRow;
  row.phases = PHASE_NAMES.map((_, i) => {
    const ps = rows.map((r) => r.phases[i]!);
    const pk = Object.keys(ps[0]!) as (keyof PhaseRow)[];
    return Object.fromEntries(pk.map((k) => [k, median(ps.map((p) => p[k]))])) as unknown as PhaseRow;
  });
  const names = new Set(rows.flatMap((r) => Object.keys(r.threadsUs)));
  row.threadsUs = Object.fromEntries([...names].map((n) => [n, median(rows.map((r) => r.threadsUs[n] ?? 0))]));
  return row;
};

/** One phase: its wall time, steps, puts, commits per put, puts in flight on average, idle with a put in flight and in all (µs per step of the phase). */
const fmtPhase = (name: string, p: PhaseRow) =>
  `${name} ${p.ms.toFixed(1)} ms, ${p.steps.toFixed(0)} steps, ${p.puts.toFixed(0)} puts, ${(p.commits / Math.max(1, p.puts)).toFixed(1)} commits/put, ` +
  `${p.inFlight.toFixed(2)} in flight, idle with a put in flight ${((p.idleInFlightMs * 1000) / Math.max(1, p.steps)).toFixed(1)} µs/step (idle in all ${((p.idleMs * 1000) / Math.max(1, p.steps)).toFixed(1)})`;
const fmtPhases = (r: WindowRow) => PHASE_NAMES.map((n, i) => fmtPhase(n, r.phases[i]!)).join("; ");
const fmtThreads = (r: WindowRow) =>
  Object.entries(r.threadsUs)
    .filter(([, us]) => us >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([n, us]) => `${n} ${us.toFixed(1)}`)
    .join(", ");

if (process.env.COHORT_WINDOWS_CHILD !== undefined) {
  hook();
  const setting = process.env.COHORT_WINDOWS_CHILD;
  const cohorts = setting === "default" ? undefined : Number(setting);
  const rows: WindowRow[] = [];
  for (let w = 0; w < WARMUPS + REPEATS; w++) rows.push(await window(cohorts));
  process.stdout.write(`${JSON.stringify(rows)}\n`);
} else {
  console.log(
    `cohort-windows: SETTINGS=${SETTINGS.join(",")} PAIRS=${PAIRS} WARMUPS=${WARMUPS} REPEATS=${REPEATS} N_TP=${N_TP} CONC=${CONC} DIR=${process.env.DIR ?? tmpdir()}; node ${process.version}; load ${loadAverageText()}`,
  );
  const self = fileURLToPath(import.meta.url);
  const tsx = join(process.cwd(), "node_modules/.bin/tsx");
  const figures = new Map<string, number[]>(SETTINGS.map((s) => [s, []]));
  const measured = new Map<string, WindowRow[]>(SETTINGS.map((s) => [s, []]));
  /** Every process's windows, warm-ups included, per setting. */
  const byWindow = new Map<string, WindowRow[][]>(SETTINGS.map((s) => [s, []]));
  for (let p = 1; p <= PAIRS; p++) {
    for (const setting of p % 2 === 1 ? SETTINGS : [...SETTINGS].reverse()) {
      const child = spawnSync(tsx, [self], { env: { ...process.env, COHORT_WINDOWS_CHILD: setting }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
      if (child.status !== 0) throw new Error(`child ${setting} failed: ${child.stderr}`);
      const rows = JSON.parse(lastLine(child.stdout)) as WindowRow[];
      const kept = rows.slice(WARMUPS);
      const fig = median(kept.map((r) => r.stepsPerSec));
      figures.get(setting)!.push(fig);
      measured.get(setting)!.push(...kept);
      console.log(
        `pair ${p} ${setting}: ${fig.toFixed(0)} steps/s (windows ${rows.map((r) => r.stepsPerSec.toFixed(0)).join(", ")}); load ${loadAverageText()}`,
      );
      byWindow.get(setting)!.push(rows);
      if (VERBOSE)
        for (const [i, r] of rows.entries()) {
          console.log(`  window ${i + 1}${i < WARMUPS ? " (warm-up)" : ""}: ${fmt(r)}`);
          console.log(`    phases: ${fmtPhases(r)}`);
          console.log(`    threads µs/step: ${fmtThreads(r)}`);
        }
    }
  }
  for (const s of SETTINGS) {
    console.log(
      `${s}: process medians ${figures
        .get(s)!
        .map((x) => x.toFixed(0))
        .join(", ")}; median ${median(figures.get(s)!).toFixed(0)} steps/s`,
    );
    console.log(`  measured windows, median: ${fmt(medianRow(measured.get(s)!))}`);
  }
  // Window by window (the median over the processes of each window's figures): how a fresh process's windows
  // differ from each other and between the settings, phase by phase, and which threads took the CPU.
  for (const s of SETTINGS) {
    const procs = byWindow.get(s)!;
    console.log(`${s}, window by window (median over ${procs.length} processes):`);
    for (let w = 0; w < WARMUPS + REPEATS; w++) {
      const r = medianRow(procs.map((rows) => rows[w]!));
      console.log(
        `  window ${w + 1}${w < WARMUPS ? " (warm-up)" : ""}: ${r.stepsPerSec.toFixed(0)} steps/s, puts/step ${r.putsPerStep.toFixed(4)}, main CPU ${r.cpuUs.toFixed(1)} µs/step`,
      );
      console.log(`    ${fmtPhases(r)}`);
      console.log(`    threads µs/step: ${fmtThreads(r)}`);
    }
  }
  // The deciding figure for the default: each pair's second setting over its first, as the side-by-side would
  // report them one after the other; the median of those ratios, and how many pairs the second won.
  if (SETTINGS.length >= 2) {
    const [a, b] = [SETTINGS[0]!, SETTINGS[1]!];
    const fa = figures.get(a)!;
    const fb = figures.get(b)!;
    const ratios = fb.map((x, i) => x / fa[i]!);
    const won = ratios.filter((r) => r > 1).length;
    const ratio = median(ratios);
    const byWindows = median(measured.get(b)!.map((r) => r.stepsPerSec)) / median(measured.get(a)!.map((r) => r.stepsPerSec));
    const wins = ratio >= DECIDES_AT && won * 4 >= 3 * ratios.length;
    console.log(
      `deciding figure: ${b} over ${a}, median of the pairs' ratios ${ratio.toFixed(3)} (${ratios.map((r) => r.toFixed(2)).join(", ")}), ${b} ahead in ${won} of ${ratios.length} pairs; ` +
        `by measured windows ${byWindows.toFixed(3)}: ${wins ? `${b} wins (at least ${DECIDES_AT} and three pairs in four)` : `${a} stays (${b} needs at least ${DECIDES_AT} and three pairs in four)`}`,
    );
  }
  console.log(`load at end ${loadAverageText()}`);
}

function lastLine(s: string): string {
  const lines = s.trim().split("\n");
  return lines[lines.length - 1]!;
}
