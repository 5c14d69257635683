/**
 * @module Where the side-by-side throughput window's wall time goes, on this
 * tree (MemoryStore by default): the peer harness's throughput measurement
 * run through the same adapter code (a fresh store per window, PRIME untimed
 * runs 10 at a time, then N_TP runs of M continuing steps with CONC in
 * flight, each run `submit`, `wait`, `outcome`; `maxConcurrentSteps(64)`,
 * default queue options), reported window by window so the first windows
 * (JIT) show apart from the later ones.
 *
 * Per window: steps/s; the main thread's busy and idle time
 * (`performance.eventLoopUtilization`) and the process CPU; collector pauses
 * (PerformanceObserver 'gc'); the ramp (first run's end, steps in the first
 * tenth) and the tail (from the last submit to the end, how many runs were
 * in flight then, the share of the window with fewer than CONC in flight);
 * each phase's wall time per run (submit, wait, outcome) at the median.
 *
 * Idle by cause: every timer and immediate the process starts in the
 * window is wrapped (global `setTimeout` / `setImmediate`); when one fires,
 * the loop's idle time since the last wrapped callback is charged to it, by
 * its delay (immediate, `setTimeout(0/1)`, `setTimeout(n)`) and with
 * SITES=1 by the project frame that armed it. Over MemoryStore nothing else
 * ends an idle wait (no IO), so the charged idle is about all of it; what is
 * left is printed as "other". Counts per run (timers armed and fired,
 * immediates, engine commits, WAL puts) do not depend on the machine's load.
 *
 * CPU by phase (PROFILE=1): an in-process CPU profile of the measured
 * windows, each busy sample charged to the first of the workload's entry
 * frames on its stack (submit, wait, outcome, the step worker, the WAL
 * writer's timers); samples of none of them are "other".
 *
 * Run: `npx tsx bench/peer-window.ts`; env WINDOWS (5, the first is the
 * harness's warm-up), N_TP (200), CONC (50), M (10), PRIME (10), STORE
 * (memory | local), FLUSH_MS (queue default unless set), COHORTS (`walCohorts`; the default unless set), SITES (0),
 * NAMES (0; 1 counts the function names tsx's keepNames defines at run time,
 * per step and by the line that made the function), PROFILE (0), PROFILE_OUT (a path prefix: each profiled window's profile
 * is written to `<prefix>.<window>.cpuprofile`, for cpu-profile-shares.ts), FROM (a built checkout whose `dist/` to load instead of
 * this tree's sources: the CPU benches load `dist/`, the peer bench the
 * sources through tsx), SOURCES (another checkout whose sources to load
 * through tsx, for an A/B of two trees as the peer bench runs them).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type PerformanceEntry, PerformanceObserver, performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { median, percentile } from "./support/percentile.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const WINDOWS = env("WINDOWS", 5);
const N_TP = env("N_TP", 200);
const CONC = env("CONC", 50);
const M = env("M", 10);
const PRIME = env("PRIME", 10);
const STORE = process.env.STORE ?? "memory";
const FLUSH_MS = process.env.FLUSH_MS === undefined ? undefined : Number(process.env.FLUSH_MS);
/** `walCohorts` for the engine (unset: the default), so jit-windows.ts can compare the WAL splits' windows. */
const COHORTS = process.env.COHORTS === undefined ? undefined : Number(process.env.COHORTS);
const SITES = process.env.SITES === "1";
// Under tsx (esbuild's keepNames) every function a module's code makes at run time that is named by its binding
// gets a `__name(fn, "name")` call, an `Object.defineProperty` of its name; dist/ (tsc) has none. Counted by the
// line that made the function, wrapped before the runtime's modules load (each captures Object.defineProperty then).
const nameDefs = new Map<string, number>();
let countNames = false;
if (process.env.NAMES === "1") {
  const define = Object.defineProperty;
  Object.defineProperty = <T>(o: T, p: PropertyKey, a: PropertyDescriptor & ThisType<unknown>): T => {
    if (countNames && p === "name" && typeof o === "function") {
      const lines = (new Error().stack ?? "").split("\n").slice(2);
      const own = lines.find((l) => l.includes("/runtime/"));
      const m = own?.match(/\/(runtime\/[^:]+):(\d+)/);
      const site = m === null || m === undefined ? "(outside runtime/)" : `${m[1]}:${m[2]}`;
      nameDefs.set(site, (nameDefs.get(site) ?? 0) + 1);
    }
    return define(o, p, a);
  };
}
// The runtime as the peer bench loads it (this tree's sources through tsx), or a built checkout's `dist/` (FROM=<dir>).
const FROM = process.env.FROM;
const SOURCES = process.env.SOURCES;
const T = (await import(
  FROM !== undefined
    ? pathToFileURL(join(FROM, "dist/runtime/index.js")).href
    : SOURCES !== undefined
      ? pathToFileURL(join(SOURCES, "runtime/index.ts")).href
      : "../runtime/index.js"
)) as typeof import("../runtime/index.js");
const { LocalStore, MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, withCounting } = T;
const PROFILE = process.env.PROFILE === "1";
// A line before and after each measured drive, so V8's own traces (`--trace-opt`, `--trace-deopt`, `--trace-gc`) printed to the same stdout fall into windows.
const MARKS = process.env.MARKS === "1";

const enc = (n: number) => new TextEncoder().encode(String(n));
const num = (b: Uint8Array) => Number(new TextDecoder().decode(b));

// The adapter's runner, as the peer bench writes it.
const runner = {
  async runStep(step: { payload: Uint8Array }) {
    const [j, m] = new TextDecoder().decode(step.payload).split("/").map(Number) as [number, number];
    return j + 1 >= m ? StepOutcome.succeed(enc(m)) : StepOutcome.continueNow(new TextEncoder().encode(`${j + 1}/${m}`));
  },
};

// ---- idle by cause: wrapped timers and immediates ----
let measuring = false;
let lastIdle = 0;
const idleBy = new Map<string, { idle: number; fired: number; armed: number }>();
const cause = (c: string) => {
  let e = idleBy.get(c);
  if (e === undefined) idleBy.set(c, (e = { idle: 0, fired: 0, armed: 0 }));
  return e;
};
const siteOf = (): string => {
  if (!SITES) return "";
  const lines = (new Error().stack ?? "").split("\n").slice(3);
  const own = lines.find((l) => l.includes("/runtime/"));
  const m = own?.match(/\/(runtime\/[^:]+):(\d+)/);
  return m === null || m === undefined ? " (outside runtime/)" : ` ${m[1]}:${m[2]}`;
};
const chargeIdle = (c: string) => {
  const idle = performance.eventLoopUtilization().idle;
  const e = cause(c);
  e.fired++;
  e.idle += idle - lastIdle;
  lastIdle = idle;
};
const realSetTimeout = globalThis.setTimeout;
const realSetImmediate = globalThis.setImmediate;
globalThis.setTimeout = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
  if (!measuring) return realSetTimeout(fn, ms, ...args);
  const d = ms === undefined || ms <= 1 ? `setTimeout(${ms ?? 0})` : ms < 10 ? `setTimeout(${ms})` : "setTimeout(>=10)";
  const c = d + siteOf();
  cause(c).armed++;
  return realSetTimeout(
    (...a: unknown[]) => {
      if (measuring) chargeIdle(c);
      fn(...a);
    },
    ms,
    ...args,
  );
}) as typeof setTimeout;
globalThis.setImmediate = ((fn: (...a: unknown[]) => void, ...args: unknown[]) => {
  if (!measuring) return realSetImmediate(fn, ...args);
  const c = `setImmediate${siteOf()}`;
  cause(c).armed++;
  return realSetImmediate(
    (...a: unknown[]) => {
      if (measuring) chargeIdle(c);
      fn(...a);
    },
    ...args,
  );
}) as typeof setImmediate;

// ---- the kernel's account of each thread: time on a core, and time runnable but waiting for one ----
/** Nanoseconds on a core and waiting in the run queue, of the main thread and of the process's other threads together (Linux schedstat). */
function threadTimes(): { mainRun: number; mainWait: number; othersRun: number } {
  const main = String(process.pid);
  let mainRun = 0;
  let mainWait = 0;
  let othersRun = 0;
  try {
    for (const t of readdirSync("/proc/self/task")) {
      let run: number;
      let wait: number;
      try {
        [run, wait] = readFileSync(`/proc/self/task/${t}/schedstat`, "utf8").split(" ").map(Number) as [number, number];
      } catch {
        continue; // a thread that ended between the listing and the read
      }
      if (t === main) {
        mainRun = run;
        mainWait = wait;
      } else othersRun += run;
    }
  } catch {
    return { mainRun: Number.NaN, mainWait: Number.NaN, othersRun: Number.NaN };
  }
  return { mainRun, mainWait, othersRun };
}

// ---- collector pauses ----
let gcMs = 0;
let gcCount = 0;
/** Pauses by kind (all windows): scavenges of the young generation, and the rest (mark-sweep-compact, incremental steps, weak callbacks). */
const gcByKind = new Map<string, { ms: number; n: number }>();
const GC_KINDS: Record<number, string> = { 1: "scavenge", 2: "mark-sweep-compact", 4: "incremental marking", 8: "weak callbacks" };
new PerformanceObserver((list) => {
  if (!measuring) return;
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    gcCount++;
    const kind = GC_KINDS[(e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0] ?? "other";
    const k = gcByKind.get(kind) ?? { ms: 0, n: 0 };
    k.ms += e.duration;
    k.n++;
    gcByKind.set(kind, k);
  }
}).observe({ entryTypes: ["gc"] });

// ---- CPU by phase ----
const session = new Session();
session.connect();
const post = <T>(method: string, params?: object) =>
  new Promise<T>((res, rej) => session.post(method, params ?? {}, (err, r) => (err ? rej(err) : res(r as T))));
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
const PHASES: [string, RegExp][] = [
  ["submit", /^submitRun$/],
  ["wait", /^#wait$|^wait$/],
  ["outcome", /^outcome$|^endOf$/],
  ["step worker", /^runStepWorker$|^processStep$|^stepProcessor$/],
  ["WAL writer timers", /^#onTimer$|^#onReleaseTimer$|^#send$/],
];
const phaseSamples = new Map<string, number>();
let busySamples = 0;
function chargeProfile(nodes: ProfileNode[], samples: number[]): void {
  const parent = new Map<number, number>();
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const phaseOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = phaseOf.get(id);
    if (known !== undefined) return known;
    // The outermost matching frame names the phase: the entry the sample's work came through.
    let found = "other";
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const fn = byId.get(at)!.callFrame.functionName;
      for (const [name, re] of PHASES) if (re.test(fn)) found = name;
    }
    phaseOf.set(id, found);
    return found;
  };
  for (const s of samples) {
    const fn = byId.get(s)!.callFrame.functionName;
    if (fn === "(idle)" || fn === "(program)") continue;
    busySamples++;
    const p = fn === "(garbage collector)" ? "collector" : resolve(s);
    phaseSamples.set(p, (phaseSamples.get(p) ?? 0) + 1);
  }
}

interface Window {
  wall: number;
  stepsPerSec: number;
  busy: number;
  idle: number;
  cpu: number;
  /** Main thread on a core, ms (schedstat). */
  mainRun: number;
  /** Main thread runnable but waiting for a core, ms: the machine's other load. */
  mainWait: number;
  /** The process's other threads (compiler, collector helpers) on a core, ms. */
  othersRun: number;
  gc: number;
  gcs: number;
  firstEnd: number;
  firstTenthSteps: number;
  lastSubmit: number;
  tail: number;
  inFlightAtLastSubmit: number;
  underConc: number;
  submitP50: number;
  waitP50: number;
  outcomeP50: number;
  commits: number;
  puts: number;
  gets: number;
}

async function window(label: string, profile: boolean): Promise<Window> {
  const dir = mkdtempSync(join(tmpdir(), "taquba-window-"));
  const store = withCounting(STORE === "local" ? new LocalStore(dir) : new MemoryStore());
  const queue = await Queue.open(store, "bench", {
    ...(FLUSH_MS === undefined ? {} : { flushIntervalMs: FLUSH_MS }),
    ...(COHORTS === undefined ? {} : { engineOptions: { walCohorts: COHORTS } }),
  });
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).maxConcurrentSteps(64).build();
  const handle = runtime.spawn();
  const ends: number[] = [];
  const starts: number[] = [];
  const phases = { submit: [] as number[], wait: [] as number[], outcome: [] as number[] };
  const stepEnds: number[] = [];
  const run = async (timed: boolean) => {
    const t0 = performance.now();
    const { runId } = await runtime.submit({ input: new TextEncoder().encode(`0/${M}`) });
    const t1 = performance.now();
    await runtime.wait(runId);
    const t2 = performance.now();
    const o = await runtime.outcome(runId);
    const t3 = performance.now();
    if (num(o!.result!) !== M) throw new Error(`run ${runId} did not return ${M}`);
    if (timed) {
      starts.push(t0);
      ends.push(t3);
      phases.submit.push(t1 - t0);
      phases.wait.push(t2 - t1);
      phases.outcome.push(t3 - t2);
    }
  };
  const drive = async (n: number, conc: number, timed: boolean) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(conc, n) }, async () => {
        while (next++ < n) await run(timed);
      }),
    );
  };
  // Steps ended over time, from the engine's commits would need the engine; count the runner's returns instead.
  const inner = runner.runStep;
  runner.runStep = async (step) => {
    const r = await inner(step);
    if (measuring) stepEnds.push(performance.now());
    return r;
  };
  try {
    if (PRIME > 0) await drive(PRIME, 10, false);
    store.reset();
    const batches0 = queue.engineStats.walBatches;
    gcMs = 0;
    gcCount = 0;
    if (profile) {
      await post("Profiler.enable");
      await post("Profiler.setSamplingInterval", { interval: 50 });
      await post("Profiler.start");
    }
    const th0 = threadTimes();
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    lastIdle = elu0.idle;
    measuring = true;
    countNames = profile || !PROFILE;
    if (MARKS) console.log(`[window-mark start ${label}] at ${performance.now().toFixed(3)} ms`);
    const t0 = performance.now();
    await drive(N_TP, CONC, true);
    const wall = performance.now() - t0;
    if (MARKS) console.log(`[window-mark end ${label}] at ${performance.now().toFixed(3)} ms`);
    measuring = false;
    countNames = false;
    const elu = performance.eventLoopUtilization(elu0);
    const cpu = process.cpuUsage(cpu0);
    const th = threadTimes();
    if (profile) {
      const { profile: p } = await post<{ profile: { nodes: ProfileNode[]; samples: number[] } }>("Profiler.stop");
      chargeProfile(p.nodes, p.samples);
      if (process.env.PROFILE_OUT !== undefined) writeFileSync(`${process.env.PROFILE_OUT}.${label.replace(/\W+/g, "-")}.cpuprofile`, JSON.stringify(p));
    }
    const steps = N_TP * M;
    const lastSubmit = Math.max(...starts) - t0;
    const end = t0 + wall;
    const inFlightAt = (t: number) => starts.filter((s, i) => s <= t && ends[i]! > t).length;
    // Share of the window with fewer than CONC runs in flight, sampled every 0.1 ms.
    let under = 0;
    let samples = 0;
    for (let t = t0; t < end; t += 0.1, samples++) if (inFlightAt(t) < Math.min(CONC, N_TP)) under++;
    const c = store.counts;
    return {
      wall,
      stepsPerSec: steps / (wall / 1000),
      busy: elu.active,
      idle: elu.idle,
      cpu: (cpu.user + cpu.system) / 1000,
      mainRun: (th.mainRun - th0.mainRun) / 1e6,
      mainWait: (th.mainWait - th0.mainWait) / 1e6,
      othersRun: (th.othersRun - th0.othersRun) / 1e6,
      gc: gcMs,
      gcs: gcCount,
      firstEnd: Math.min(...ends) - t0,
      firstTenthSteps: stepEnds.filter((s) => s - t0 < wall / 10).length,
      lastSubmit,
      tail: wall - lastSubmit,
      inFlightAtLastSubmit: inFlightAt(t0 + lastSubmit),
      underConc: under / samples,
      submitP50: percentile(
        [...phases.submit].sort((a, b) => a - b),
        50,
      ),
      waitP50: percentile(
        [...phases.wait].sort((a, b) => a - b),
        50,
      ),
      outcomeP50: percentile(
        [...phases.outcome].sort((a, b) => a - b),
        50,
      ),
      commits: queue.engineStats.walBatches - batches0,
      puts: c.puts,
      gets: c.gets,
    };
  } finally {
    runner.runStep = inner;
    await handle.shutdown();
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const f = (x: number, d = 2) => x.toFixed(d);
console.log(
  `${FROM !== undefined ? `dist of ${FROM}` : `sources (tsx) of ${SOURCES ?? "this tree"}`} STORE=${STORE} N_TP=${N_TP} CONC=${CONC} M=${M} PRIME=${PRIME} FLUSH_MS=${FLUSH_MS ?? "default"} COHORTS=${COHORTS ?? "default"} WINDOWS=${WINDOWS}; load ${loadAverageText()}; node ${process.version}`,
);
const ws: Window[] = [];
for (let i = 0; i < WINDOWS; i++) ws.push(await window(i === 0 ? "warm-up" : `window ${i}`, PROFILE && i > 0));
const steps = N_TP * M;
console.log(
  "| window | steps/s | CPU µs/step | main thread on a core µs/step | main thread waiting for a core µs/step | other threads µs/step | wall ms | busy ms | idle ms | CPU ms | gc ms (n) | first run end ms | steps in first tenth | last submit ms | tail ms | in flight at last submit | share < CONC in flight | submit / wait / outcome p50 ms | commits/step | puts/step | gets/step |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
ws.forEach((w, i) => {
  console.log(
    `| ${i === 0 ? "warm-up" : i} | ${f(w.stepsPerSec, 0)} | ${f((w.cpu * 1000) / steps, 1)} | ${f((w.mainRun * 1000) / steps, 1)} | ${f((w.mainWait * 1000) / steps, 1)} | ${f((w.othersRun * 1000) / steps, 1)} | ${f(w.wall, 1)} | ${f(w.busy, 1)} | ${f(w.idle, 1)} | ${f(w.cpu, 1)} | ${f(w.gc, 1)} (${w.gcs}) | ${f(w.firstEnd)} | ${w.firstTenthSteps} | ${f(w.lastSubmit, 1)} | ${f(w.tail, 1)} | ${w.inFlightAtLastSubmit} | ${f(w.underConc * 100, 1)} % | ${f(w.submitP50, 3)} / ${f(w.waitP50, 3)} / ${f(w.outcomeP50, 3)} | ${f(w.commits / steps, 3)} | ${f(w.puts / steps, 4)} | ${f(w.gets / steps, 4)} |`,
  );
});
const later = ws.slice(1);
console.log(
  `later windows, median: ${f(median(later.map((w) => w.stepsPerSec)), 0)} steps/s; wall ${f((median(later.map((w) => w.wall)) * 1000) / steps, 1)} µs/step = busy ${f((median(later.map((w) => w.busy)) * 1000) / steps, 1)} + idle ${f((median(later.map((w) => w.idle)) * 1000) / steps, 1)}; CPU ${f((median(later.map((w) => w.cpu)) * 1000) / steps, 1)} µs/step (main thread on a core ${f((median(later.map((w) => w.mainRun)) * 1000) / steps, 1)}, waiting for a core ${f((median(later.map((w) => w.mainWait)) * 1000) / steps, 1)}, other threads ${f((median(later.map((w) => w.othersRun)) * 1000) / steps, 1)}); gc ${f((median(later.map((w) => w.gc)) * 1000) / steps, 1)} µs/step`,
);
const totalIdle = ws.reduce((a, w) => a + w.idle, 0);
const shareOfIdle = (ms: number) => (totalIdle > 0 ? `${f((ms / totalIdle) * 100, 1)} %` : "-");
console.log("\nIdle by what ended it (all windows), and timers per run:");
console.log("| cause | idle ms | share of idle | armed per run | fired per run |");
console.log("|---|---|---|---|---|");
const runs = N_TP * WINDOWS;
let charged = 0;
for (const [c, e] of [...idleBy].sort((a, b) => b[1].idle - a[1].idle)) {
  charged += e.idle;
  console.log(`| ${c} | ${f(e.idle, 1)} | ${shareOfIdle(e.idle)} | ${f(e.armed / runs, 3)} | ${f(e.fired / runs, 3)} |`);
}
console.log(`| other (no wrapped callback after it) | ${f(totalIdle - charged, 1)} | ${shareOfIdle(totalIdle - charged)} | | |`);
if (nameDefs.size > 0) {
  const all = [...nameDefs.values()].reduce((a, b) => a + b, 0);
  console.log(`\nFunction names defined at run time (tsx's keepNames), per step: ${f(all / (steps * WINDOWS), 3)}; by site:`);
  for (const [site, n] of [...nameDefs].sort((a, b) => b[1] - a[1])) console.log(`| ${site} | ${f(n / (steps * WINDOWS), 3)} |`);
}
console.log(
  `\nCollector pauses by kind (all windows): ${[...gcByKind].map(([k, v]) => `${k} ${v.n} (${f(v.ms, 1)} ms, ${f((v.ms * 1000) / (steps * WINDOWS), 2)} µs/step)`).join(", ")}`,
);
if (PROFILE) {
  console.log("\nCPU by phase (measured windows, busy samples):");
  for (const [p, n] of [...phaseSamples].sort((a, b) => b[1] - a[1])) console.log(`${p}: ${f((n / busySamples) * 100, 1)} %`);
}
console.log(`load at end ${loadAverageText()}`);
