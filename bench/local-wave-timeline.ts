/**
 * @module Where a wave's wall time goes at 50 in flight, LocalStore beside
 * MemoryStore: the side-by-side workload (runs of 10 no-op steps, CONC in
 * flight), with each store's create-if-absent puts (the WAL objects) timed
 * by wrapping the store class's `put` on its prototype, so the store itself
 * (and its put thread) is the one measured.
 *
 * Per round and store: steps/s; WAL puts per step; a put's wall time from
 * issue to settle (p50 / p90, ms); the share of wall time with a WAL put in
 * flight; the main thread's CPU (Linux schedstat) inside those windows and
 * outside them, per step; the gap from a put's landing to the next put's
 * issue (the wave's CPU between puts, ms). With one put at a time, a wave
 * is a put plus a gap: the put's wall time is what MemoryStore does not pay.
 *
 * Usage: `npx tsx bench/local-wave-timeline.ts`. Env: STORES (local,memory),
 * N_RUNS (200), CONC (50), ROUNDS (6), alternating the stores' order each
 * round; medians over the rounds after the first.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as T from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { median, percentile } from "./support/percentile.js";
import { openStepWorkload, STEPS_PER_RUN } from "./support/step-workload.js";

const N_RUNS = Number(process.env.N_RUNS ?? 200);
const CONC = Number(process.env.CONC ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const STORES = (process.env.STORES ?? "local,memory").split(",");

function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

/** The main thread's time runnable but waiting for a core so far, ns (Linux schedstat). */
function mainThreadQueuedNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[1]);
}

/** The main thread's voluntary context switches so far (each a wait that ended in a wake-up). */
function mainThreadWaits(): number {
  return Number(/voluntary_ctxt_switches:\s*(\d+)/.exec(readFileSync(`/proc/self/task/${process.pid}/status`, "utf8"))?.[1] ?? Number.NaN);
}

/** What the wrapped puts saw while `on`. */
const seen = {
  on: false,
  puts: 0,
  walls: [] as number[],
  gaps: [] as number[],
  inFlight: 0,
  /** When the current in-flight window opened (ms), and the main thread's ns then. */
  windowStart: 0,
  windowCpu: 0,
  inFlightMs: 0,
  inFlightCpuNs: 0,
  lastLanded: -1,
};

function wrap(proto: { put(key: string, body: Uint8Array, opts?: T.PutOptions): Promise<{ etag: string }> }): void {
  const put = proto.put;
  proto.put = async function (this: unknown, key: string, body: Uint8Array, opts?: T.PutOptions) {
    if (!seen.on || opts?.ifNoneMatch !== "*") return put.call(this, key, body, opts);
    const t0 = performance.now();
    if (seen.lastLanded >= 0) seen.gaps.push(t0 - seen.lastLanded);
    if (seen.inFlight++ === 0) {
      seen.windowStart = t0;
      seen.windowCpu = mainThreadNs();
    }
    try {
      return await put.call(this, key, body, opts);
    } finally {
      const t1 = performance.now();
      seen.puts++;
      seen.walls.push(t1 - t0);
      seen.lastLanded = t1;
      if (--seen.inFlight === 0) {
        seen.inFlightMs += t1 - seen.windowStart;
        seen.inFlightCpuNs += mainThreadNs() - seen.windowCpu;
      }
    }
  };
}
wrap(T.LocalStore.prototype);
wrap(T.MemoryStore.prototype);

interface Row {
  stepsPerSec: number;
  putsPerStep: number;
  putP50: number;
  putP90: number;
  inFlightShare: number;
  cpuInFlightUs: number;
  cpuOutsideUs: number;
  gapP50: number;
  /** The event loop's active time per step (`performance.eventLoopUtilization`), µs: CPU, time waiting for a core, and blocking calls. */
  busyUs: number;
  /** The main thread's time runnable but not running, per step, µs. */
  queuedUs: number;
  /** The main thread's voluntary context switches per WAL put. */
  waitsPerPut: number;
}

async function round(kind: string): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "bench-wave-timeline-"));
  const store = kind === "local" ? new T.LocalStore(dir) : new T.MemoryStore();
  const w = await openStepWorkload(T, store);
  try {
    await w.drive(20, 10);
    Object.assign(seen, { on: true, puts: 0, walls: [], gaps: [], inFlight: 0, inFlightMs: 0, inFlightCpuNs: 0, lastLanded: -1 });
    const cpu0 = mainThreadNs();
    const queued0 = mainThreadQueuedNs();
    const waits0 = mainThreadWaits();
    const elu0 = performance.eventLoopUtilization();
    const t0 = performance.now();
    await w.drive(N_RUNS, CONC);
    const wall = performance.now() - t0;
    const cpu = mainThreadNs() - cpu0;
    const elu = performance.eventLoopUtilization(elu0);
    const queued = mainThreadQueuedNs() - queued0;
    const waits = mainThreadWaits() - waits0;
    seen.on = false;
    const steps = N_RUNS * STEPS_PER_RUN;
    const walls = [...seen.walls].sort((a, b) => a - b);
    const gaps = [...seen.gaps].sort((a, b) => a - b);
    return {
      stepsPerSec: steps / (wall / 1000),
      putsPerStep: seen.puts / steps,
      putP50: percentile(walls, 50),
      putP90: percentile(walls, 90),
      inFlightShare: seen.inFlightMs / wall,
      cpuInFlightUs: seen.inFlightCpuNs / 1000 / steps,
      cpuOutsideUs: (cpu - seen.inFlightCpuNs) / 1000 / steps,
      gapP50: percentile(gaps, 50),
      busyUs: (elu.active * 1000) / steps,
      queuedUs: queued / 1000 / steps,
      waitsPerPut: waits / seen.puts,
    };
  } finally {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (r: Row) =>
  `${r.stepsPerSec.toFixed(0)} steps/s, puts/step ${r.putsPerStep.toFixed(4)}, put p50/p90 ${r.putP50.toFixed(3)}/${r.putP90.toFixed(3)} ms, ` +
  `in flight ${(100 * r.inFlightShare).toFixed(1)} % of wall, main CPU µs/step in flight ${r.cpuInFlightUs.toFixed(1)} / outside ${r.cpuOutsideUs.toFixed(1)}, ` +
  `gap landing→next put p50 ${r.gapP50.toFixed(3)} ms, loop busy ${r.busyUs.toFixed(1)} µs/step, main queued ${r.queuedUs.toFixed(1)} µs/step, main waits/put ${r.waitsPerPut.toFixed(2)}`;

console.log(`local-wave-timeline: N_RUNS=${N_RUNS} CONC=${CONC} ROUNDS=${ROUNDS} STORES=${STORES.join(",")} ${loadAverageText()}`);
const rows = new Map<string, Row[]>(STORES.map((s) => [s, []]));
for (let r = 1; r <= ROUNDS; r++) {
  const order = r % 2 === 1 ? STORES : [...STORES].reverse();
  for (const kind of order) {
    const row = await round(kind);
    rows.get(kind)!.push(row);
    console.log(`round ${r} ${kind}: ${fmt(row)}`);
  }
}
for (const [kind, list] of rows) {
  const kept = list.slice(1);
  const m = (f: (r: Row) => number) => median(kept.map(f));
  console.log(
    `median after round 1, ${kind}: ${fmt({
      stepsPerSec: m((r) => r.stepsPerSec),
      putsPerStep: m((r) => r.putsPerStep),
      putP50: m((r) => r.putP50),
      putP90: m((r) => r.putP90),
      inFlightShare: m((r) => r.inFlightShare),
      cpuInFlightUs: m((r) => r.cpuInFlightUs),
      cpuOutsideUs: m((r) => r.cpuOutsideUs),
      gapP50: m((r) => r.gapP50),
      busyUs: m((r) => r.busyUs),
      queuedUs: m((r) => r.queuedUs),
      waitsPerPut: m((r) => r.waitsPerPut),
    })}`,
  );
}
console.log(`load at end ${loadAverageText()}`);
