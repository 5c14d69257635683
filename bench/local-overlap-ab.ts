/**
 * @module How much of a LocalStore WAL put the main thread spends idle, and
 * whether scheduling the puts differently overlaps it with step work: the
 * side-by-side workload (runs of 10 no-op steps, CONC in flight) under
 * several put schedules, alternated round by round in one process, the
 * order reversed every other round.
 *
 * Schedules (`MODES`, comma-separated, each a `+`-joined list of):
 * - `lock`: the default (one cohort; every commit of a landing released at
 *   once, as over any store whose puts contend).
 * - `c2`, `c3`: `walCohorts` 2 or 3 (an object sealed at its share of the
 *   last wave; over a contending store the rest waits for the landing).
 * - `groups`: the store seen as one whose puts overlap (the contention mark
 *   not passed on) and every put counted slow, so a landing releases its
 *   commits `RELEASE_GROUP` per macrotask: a group's next commits are sealed
 *   and on their way while the later groups run.
 * - `2t`: `secondPutThread`, so that a put beside another goes to a second
 *   thread instead of the pool.
 *
 * Per round: steps/s; per-run latency / 10 p50 and p99 (ms); WAL puts per
 * step and bytes per put; the share of wall time with a WAL put in flight;
 * the event loop's idle time while a put is in flight, per step (the time
 * nothing was ready to run: what a cycle pays beyond the main thread's
 * work); how many puts were issued beside another; the main thread's CPU
 * per step (Linux schedstat), and that of V8's platform threads (compiles,
 * marking) and of the put thread with libuv's pool: in a fresh process the
 * first take the second core the put thread needs.
 *
 * With LATENCY_MS above 0 the store is a MemoryStore whose calls each take
 * that long (`withLatency`, puts that overlap: `lock` then releases at once
 * as over a fast store, `groups` by groups): the schedules' own cost to the
 * main thread, with no put thread running beside it.
 *
 * Usage: `npx tsx bench/local-overlap-ab.ts`. Env: MODES (lock,c2,groups,groups+2t), LATENCY_MS (0),
 * N_RUNS (200), CONC (50), ROUNDS (6); medians over the rounds after the first (all with one round).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as T from "../runtime/index.js";
import { releaseTuning } from "../runtime/engine/wal-writer.js";
import { passPutBodyReleased } from "../runtime/store/put-body.js";
import { loadAverageText } from "./support/load-average.js";
import { median, percentile } from "./support/percentile.js";
import { chainRunner, runtimeWorkload, STEPS_PER_RUN } from "./support/step-workload.js";
import { WalPutWindows } from "./support/wal-put-windows.js";

const N_RUNS = Number(process.env.N_RUNS ?? 200);
const CONC = Number(process.env.CONC ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 6);
/** Above 0: a MemoryStore whose calls each take this many ms (`withLatency`) instead of LocalStore. */
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 0);
const MODES = (process.env.MODES ?? "lock,c2,groups,groups+2t").split(",");
const enc = new TextEncoder();

function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

/** The threads alive before any store was opened: V8's platform workers (concurrent compiles and marking, parallel scavenges) and Node's own. */
const startupThreads = new Set(readdirSync("/proc/self/task"));

/** Time on a core, ns, of V8's platform workers (other than the main thread, alive from start-up) and of the threads started since (the put thread, libuv's pool). */
function otherThreadsNs(): { platform: number; later: number } {
  let platform = 0;
  let later = 0;
  for (const t of readdirSync("/proc/self/task")) {
    if (t === String(process.pid)) continue;
    let ns: number;
    try {
      ns = Number(readFileSync(`/proc/self/task/${t}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      continue; // ended between the listing and the read
    }
    if (startupThreads.has(t)) platform += ns;
    else later += ns;
  }
  return { platform, later };
}

const seen = new WalPutWindows();
seen.wrap(T.LocalStore.prototype);

/** `store` seen through a proxy: the same calls, without the contention mark (its body release mark passed on). */
function overlapping(store: T.LocalStore): T.ObjectStore {
  const proxy = new Proxy(store, {
    get(target, name) {
      const v = Reflect.get(target, name, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  passPutBodyReleased(store, proxy);
  return proxy;
}

interface Row {
  stepsPerSec: number;
  p50: number;
  p99: number;
  putsPerStep: number;
  bytesPerPut: number;
  inFlightShare: number;
  idleInFlightUs: number;
  besidePerPut: number;
  cpuUs: number;
  /** V8's platform workers' CPU per step, µs: what competes with the put thread for the second core. */
  platformUs: number;
  /** The put thread's and libuv's pool's CPU per step, µs. */
  laterUs: number;
}

async function round(mode: string): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "bench-local-overlap-"));
  const parts = mode.split("+");
  const groups = parts.includes("groups");
  const cohorts = parts.includes("c3") ? 3 : parts.includes("c2") ? 2 : 1;
  let store: T.ObjectStore;
  if (LATENCY_MS > 0) {
    // No put thread: what a schedule costs the main thread by its own work, without a thread's put beside it.
    store = T.withLatency(new T.MemoryStore(), { ms: LATENCY_MS });
    seen.wrap(store);
  } else {
    const local = new T.LocalStore(dir, { secondPutThread: parts.includes("2t") });
    store = groups ? overlapping(local) : local;
  }
  const slowPutMs = releaseTuning.slowPutMs;
  if (groups) releaseTuning.slowPutMs = 0;
  const queue = await T.Queue.open(store, "bench", { engineOptions: { walCohorts: cohorts } });
  const w = runtimeWorkload(T, queue, store, chainRunner(T), enc.encode(`0/${STEPS_PER_RUN}`));
  try {
    await w.drive(20, 10);
    seen.start();
    const cpu0 = mainThreadNs();
    const others0 = otherThreadsNs();
    const t0 = performance.now();
    const lat = await w.drive(N_RUNS, CONC);
    const wall = performance.now() - t0;
    const cpu = mainThreadNs() - cpu0;
    const others = otherThreadsNs();
    seen.on = false;
    const steps = N_RUNS * STEPS_PER_RUN;
    return {
      stepsPerSec: steps / (wall / 1000),
      p50: percentile(lat, 50) / STEPS_PER_RUN,
      p99: percentile(lat, 99) / STEPS_PER_RUN,
      putsPerStep: seen.puts / steps,
      bytesPerPut: seen.bytes / seen.puts,
      inFlightShare: seen.inFlightMs / wall,
      idleInFlightUs: (seen.idleInFlightMs * 1000) / steps,
      besidePerPut: seen.beside / seen.puts,
      cpuUs: cpu / 1000 / steps,
      platformUs: (others.platform - others0.platform) / 1000 / steps,
      laterUs: (others.later - others0.later) / 1000 / steps,
    };
  } finally {
    await w.close();
    releaseTuning.slowPutMs = slowPutMs;
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (r: Row) =>
  `${r.stepsPerSec.toFixed(0)} steps/s, per-step p50/p99 ${r.p50.toFixed(3)}/${r.p99.toFixed(3)} ms, puts/step ${r.putsPerStep.toFixed(4)}, ` +
  `${r.bytesPerPut.toFixed(0)} B/put, put in flight ${(100 * r.inFlightShare).toFixed(1)} % of wall, loop idle with a put in flight ${r.idleInFlightUs.toFixed(1)} µs/step, ` +
  `puts beside another ${(100 * r.besidePerPut).toFixed(0)} %, main CPU ${r.cpuUs.toFixed(1)} µs/step, ` +
  `V8 platform threads ${r.platformUs.toFixed(1)} µs/step, put thread and pool ${r.laterUs.toFixed(1)} µs/step`;

console.log(`local-overlap-ab: LATENCY_MS=${LATENCY_MS} N_RUNS=${N_RUNS} CONC=${CONC} ROUNDS=${ROUNDS} MODES=${MODES.join(",")} ${loadAverageText()}`);
const rows = new Map<string, Row[]>(MODES.map((m) => [m, []]));
for (let r = 1; r <= ROUNDS; r++) {
  for (const mode of r % 2 === 1 ? MODES : [...MODES].reverse()) {
    const row = await round(mode);
    rows.get(mode)!.push(row);
    console.log(`round ${r} ${mode}: ${fmt(row)}`);
  }
}
for (const [mode, list] of rows) {
  const kept = list.length > 1 ? list.slice(1) : list;
  const m = (f: (r: Row) => number) => median(kept.map(f));
  const keys = Object.keys(kept[0]!) as (keyof Row)[];
  console.log(`median after round 1, ${mode}: ${fmt(Object.fromEntries(keys.map((k) => [k, m((r) => r[k])])) as unknown as Row)}`);
}
console.log(`load at end ${loadAverageText()}`);
