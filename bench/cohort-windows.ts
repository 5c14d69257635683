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
 *
 * Parent (default): alternates child processes of settings A and B
 * (`SETTINGS`, comma-separated: `default` opens the engine without
 * `walCohorts`, which is 1, a number sets it), the order reversed every
 * other pair, and
 * prints each process's median and windows, then the medians per setting.
 * The side-by-side's figure for LocalStore is one such process's median.
 *
 * Usage: `npx tsx bench/cohort-windows.ts`. Env: SETTINGS (1,2), PAIRS (4), WARMUPS (4), REPEATS (3),
 * N_TP (200), CONC (50), VERBOSE (0; 1 prints every window's counts), DIR (the stores' parent directory; the
 * system's temporary directory unless set: a tmpfs there makes puts short beside the wave's CPU, as a quiet
 * machine's fast disk would).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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
  const seal = WalWriter.prototype.seal;
  WalWriter.prototype.seal = function (this: WalWriter) {
    const before = this.stats.batches;
    const seq = seal.call(this);
    if (seen.on && this.stats.batches > before) seen.sealSizes.push(this.stats.batches - before);
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
    const one = (async () => {
      const { runId } = await runtime.submit({ input: enc(`0/${M}`) });
      await runtime.wait(runId);
      const o = await runtime.outcome(runId);
      if (o?.status !== "succeeded") throw new Error(`run ${runId} did not succeed`);
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
  try {
    await drive(10, 10);
    Object.assign(seen, { on: true, sealSizes: [], early: 0, held: 0, waves: [], split: 0 });
    walPuts.start();
    const cpu0 = mainThreadNs();
    const t0 = performance.now();
    await drive(N_TP, CONC);
    const wall = performance.now() - t0;
    const cpu = mainThreadNs() - cpu0;
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
    return {
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
    };
  } finally {
    await handle.shutdown();
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (r: WindowRow) =>
  `${r.stepsPerSec.toFixed(0)} steps/s, puts/step ${r.putsPerStep.toFixed(4)}, commits/put ${r.commitsPerPut.toFixed(1)}, ` +
  `neighbour puts min/max p50 ${r.evenness.toFixed(2)} (under 1/3: ${(100 * r.lopsided).toFixed(0)} %), early seals/put ${r.earlySealsPerPut.toFixed(2)}, ` +
  `held for a landing/put ${r.heldForLandingPerPut.toFixed(2)}, wave p50 ${r.waveP50.toFixed(0)} (under 32: ${(100 * r.smallWaves).toFixed(0)} %), two cohorts after ${(100 * r.splitLandings).toFixed(0)} % of landings, ` +
  `put in flight ${(100 * r.inFlightShare).toFixed(0)} %, idle with a put in flight ${r.idleInFlightUs.toFixed(1)} µs/step, beside ${(100 * r.besidePerPut).toFixed(0)} %, main CPU ${r.cpuUs.toFixed(1)} µs/step`;

const medianRow = (rows: WindowRow[]): WindowRow => {
  const keys = Object.keys(rows[0]!) as (keyof WindowRow)[];
  return Object.fromEntries(keys.map((k) => [k, median(rows.map((r) => r[k]))])) as unknown as WindowRow;
};

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
      if (VERBOSE) for (const [i, r] of rows.entries()) console.log(`  window ${i + 1}${i < WARMUPS ? " (warm-up)" : ""}: ${fmt(r)}`);
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
  console.log(`load at end ${loadAverageText()}`);
}

function lastLine(s: string): string {
  const lines = s.trim().split("\n");
  return lines[lines.length - 1]!;
}
