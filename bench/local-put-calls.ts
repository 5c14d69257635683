/**
 * @module Where a one-at-a-time step's WAL put on a LocalStore spends its
 * time: every file-system request the put issues (each one a trip to
 * libuv's thread pool), when it was issued after the put started and how
 * long it took to come back, against the same system calls made directly
 * (synchronously, no thread pool) on a sibling directory in the same
 * minutes: the disk's own cost of the sequence.
 *
 * The workload is the side-by-side's taquba one alone: runs of N_STEPS
 * no-op steps one at a time (`submit`, `wait`, `outcome`), over a
 * LocalStore in a fresh directory. Rounds alternate: a block of runs, then
 * a block of direct puts, so the machine's drift hits both alike.
 *
 * Usage: `npx tsx bench/local-put-calls.ts [checkout]`, where `checkout` is
 * a directory whose `runtime/` is measured (default: this one), so two
 * checkouts can be compared in one session by alternating runs.
 * Env: N_RUNS (20 runs per round), N_STEPS (10), ROUNDS (3).
 *
 * Calls made synchronously on the main thread are not requests and are not
 * listed. The request names come from a stack captured at each request, which
 * costs main-thread time: the gaps between requests are a little longer
 * than without the probe; CPU per step is measured in a separate pass
 * without it.
 */
import { createHook } from "node:async_hooks";
import { closeSync, constants as fsConstants, fsyncSync, fstatSync, linkSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type * as Runtime from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";
import { openStepWorkload } from "./support/step-workload.js";

const N_RUNS = Number(process.env.N_RUNS ?? 20);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const checkout = resolve(process.argv[2] ?? ".");
const T = (await import(pathToFileURL(join(checkout, "runtime/index.ts")).href)) as typeof Runtime;

interface FsRequest {
  name: string;
  issued: number;
  done?: number;
}
const requests = new Map<number, FsRequest>();
let probing = false;
createHook({
  init(id, type) {
    if (!probing || (type !== "FSREQPROMISE" && type !== "FSREQCALLBACK")) return;
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 4;
    const frames = new Error().stack?.split("\n") ?? [];
    Error.stackTraceLimit = limit;
    // The first frame in node's fs: "at Module.open (node:internal/fs/promises...)", "at Object.fsync (node:fs...)".
    const frame = frames.find((f) => /\(node:(internal\/fs\/promises|fs):/.test(f)) ?? "";
    const name = /at (?:Module\.|FileHandle\.|Object\.)?(\w+) \(node:/.exec(frame)?.[1] ?? "?";
    requests.set(id, { name, issued: performance.now() });
  },
  before(id) {
    const r = requests.get(id);
    if (r !== undefined && r.done === undefined) r.done = performance.now();
  },
}).enable();

const walPuts: [number, number][] = [];
class TimedStore extends T.LocalStore {
  override async put(key: string, body: Uint8Array, opts?: Runtime.PutOptions): Promise<{ etag: string }> {
    const t = performance.now();
    try {
      return await super.put(key, body, opts);
    } finally {
      if (key.includes("/wal/")) walPuts.push([t, performance.now()]);
    }
  }
}

/** Runs `n` workflow runs one at a time; per-run latencies. */
async function runs(n: number, probe: boolean): Promise<{ lat: number[]; cpuMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "bench-put-calls-"));
  try {
    const workload = await openStepWorkload(T, new TimedStore(dir), N_STEPS);
    for (let i = 0; i < 5; i++) await workload.one();
    walPuts.length = 0;
    requests.clear();
    probing = probe;
    const lat: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await workload.one();
      lat.push(performance.now() - t);
    }
    const cpu = process.cpuUsage(cpu0);
    probing = false;
    await workload.close();
    return { lat, cpuMs: (cpu.user + cpu.system) / 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The put's system calls made directly, one put after another, each timed. */
function directPuts(n: number, body: Uint8Array, into: Map<string, number[]>): void {
  const dir = mkdtempSync(join(tmpdir(), "bench-put-direct-"));
  const add = (k: string, t0: number) => {
    const t = performance.now();
    (into.get(k) ?? into.set(k, []).get(k)!).push(t - t0);
    return t;
  };
  try {
    for (let i = 0; i < n; i++) {
      const start = performance.now();
      const temp = join(dir, `%tmp.${i}`);
      const fd = openSync(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_DSYNC, 0o644);
      let t = add("open temporary file (O_CREAT|O_EXCL|O_DSYNC)", start);
      writeSync(fd, body, 0, body.length, 0);
      t = add("write (O_DSYNC: data and size on disk)", t);
      fstatSync(fd);
      t = add("fstat", t);
      linkSync(temp, join(dir, String(i).padStart(20, "0")));
      t = add("link", t);
      const d = openSync(dir, "r");
      t = add("open directory", t);
      fsyncSync(d);
      t = add("fsync directory", t);
      closeSync(d);
      closeSync(fd);
      unlinkSync(temp);
      add("close x2, unlink temporary name", t);
      add("whole put", start);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const med = (xs: readonly number[]) =>
  xs.length === 0
    ? NaN
    : percentile(
        [...xs].sort((a, b) => a - b),
        50,
      );
const lat: number[] = [];
const direct = new Map<string, number[]>();
/** Per request position in a put, by name: issue offsets from the put's start, and trip times. */
const sequence = new Map<string, { issued: number[]; trip: number[] }>();
const putMs: number[] = [];
let cpuMs = 0;
let cpuSteps = 0;
console.log(`local-put-calls: ${checkout} N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
for (let round = 0; round < ROUNDS; round++) {
  const probed = await runs(N_RUNS, true);
  lat.push(...probed.lat);
  const reqs = [...requests.values()].filter((r) => r.done !== undefined).sort((a, b) => a.issued - b.issued);
  for (const [start, end] of walPuts) {
    putMs.push(end - start);
    const mine = reqs.filter((r) => r.issued >= start && r.issued <= end);
    const seen = new Map<string, number>();
    for (const r of mine) {
      const nth = (seen.get(r.name) ?? 0) + 1;
      seen.set(r.name, nth);
      const label = nth === 1 ? r.name : `${r.name} #${nth}`;
      const entry = sequence.get(label) ?? sequence.set(label, { issued: [], trip: [] }).get(label)!;
      entry.issued.push(r.issued - start);
      entry.trip.push(r.done! - r.issued);
    }
  }
  const plain = await runs(N_RUNS, false);
  cpuMs += plain.cpuMs;
  cpuSteps += N_RUNS * N_STEPS;
  lat.push(...plain.lat);
  directPuts(N_RUNS * N_STEPS, new Uint8Array(750).fill(7), direct);
}
console.log(
  `per-step p50 ${(med(lat) / N_STEPS).toFixed(3)} ms (run p50 / ${N_STEPS}, ${lat.length} runs); CPU ${(cpuMs / cpuSteps).toFixed(3)} ms per step (unprobed runs); WAL put p50 ${med(putMs).toFixed(3)} ms (${putMs.length} puts)`,
);
console.log(
  "WAL put's file-system requests (median issue time after the put started, median trip time; a request seen in fewer than half the puts is marked):",
);
for (const [label, s] of [...sequence].sort((a, b) => med(a[1].issued) - med(b[1].issued))) {
  const rare = s.issued.length < putMs.length / 2 ? ` (in ${s.issued.length} of ${putMs.length} puts)` : "";
  console.log(`  ${label.padEnd(12)} issued at ${med(s.issued).toFixed(3)} ms, back after ${med(s.trip).toFixed(3)} ms${rare}`);
}
console.log("The same system calls made directly (no thread pool), medians:");
for (const [k, xs] of direct) console.log(`  ${k.padEnd(46)} ${med(xs).toFixed(3)} ms`);
console.log(`load at end ${loadAverageText()}`);
