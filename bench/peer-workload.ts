/**
 * @module The side-by-side peer workload on this project alone, with what
 * the peer harness does not report: store requests per step and the
 * per-step latency p99.
 *
 * Same workload and settings as the taquba adapter of the side-by-side
 * pass: one run = one workflow of M steps whose runner continues at once
 * (the last step succeeds), `maxConcurrentSteps(64)`, each run submitted,
 * waited for and its outcome read. Throughput: N_TP runs with CONC in
 * flight; latency: N_LAT runs one at a time (per-step = run latency / M).
 * Each measurement: a fresh store, PRIME untimed runs (10 at a time), then
 * the timed runs; 1 warm-up then REPEATS measured, median reported.
 *
 * Engine commits per step count the batches the engine appended to its WAL
 * (claims, settlements, submissions, background work) during the timed
 * runs, divided by the steps run.
 *
 * CPU per step is the process's user + system time over the timed runs
 * divided by the steps run; one at a time, per-step p50 minus it is about
 * what a step waits for besides its own work (the store write, timers).
 * That counts every thread of the process: the system part is mostly the
 * file system calls LocalStore's writes make on the thread pool (writes,
 * fsyncs, links). Main thread busy per step is the event loop's active
 * time (`performance.eventLoopUtilization`) over the same runs: the CPU
 * that bounds throughput once the store is not the bottleneck.
 *
 * Requests per step count every object-store call made during the timed
 * runs (WAL puts, the run result record, the memo read of `wait`/`outcome`,
 * payload objects, deletes, listings), divided by the steps run.
 *
 * Env: STORES (local,memory), N_TP (200), CONC (50), N_LAT (50), M (10),
 * REPEATS (3), FLUSH_MS (engine default unless set), PUT_THREAD (1; 0 turns
 * LocalStore's put thread off, every put through the thread pool).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { LocalStore, MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, withCounting } from "../runtime/index.js";
import { median, percentile } from "./support/percentile.js";
import { chainRunner } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N_TP = env("N_TP", 200);
const CONC = env("CONC", 50);
const N_LAT = env("N_LAT", 50);
const M = env("M", 10);
const REPEATS = env("REPEATS", 3);
const FLUSH_MS = process.env.FLUSH_MS === undefined ? undefined : Number(process.env.FLUSH_MS);
const PUT_THREAD = process.env.PUT_THREAD !== "0";
const STORES = (process.env.STORES ?? "local,memory").split(",");

const enc = new TextEncoder();
const dec = new TextDecoder();

const runner = chainRunner({ StepOutcome });

interface Measured {
  stepsPerSec: number;
  stepP50: number;
  stepP99: number;
  requestsPerStep: number;
  putsPerStep: number;
  getsPerStep: number;
  /** Engine commits (batches appended to the WAL) per step: the count the step path's design sets, independent of load. */
  commitsPerStep: number;
  /** Bytes written to the store per step (WAL objects, the run's own records). */
  bytesPerStep: number;
  /** CPU time of this process per step, µs (user + system; the whole process, so the load inflates it less than wall time). */
  cpuPerStep: number;
  /** The system part of `cpuPerStep`, µs. */
  systemPerStep: number;
  /** Main thread (event loop) active time per step, µs. */
  busyPerStep: number;
}

async function measure(kind: "throughput" | "latency", storeKind: string): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), "taquba-peer-"));
  const store = withCounting(storeKind === "local" ? new LocalStore(dir, { putThread: PUT_THREAD }) : new MemoryStore());
  const queue = await Queue.open(store, "bench", FLUSH_MS === undefined ? undefined : { flushIntervalMs: FLUSH_MS });
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).maxConcurrentSteps(64).build();
  const handle = runtime.spawn();
  const one = async () => {
    const { runId } = await runtime.submit({ input: enc.encode(`0/${M}`) });
    await runtime.wait(runId);
    const o = await runtime.outcome(runId);
    if (o?.status !== "succeeded" || Number(dec.decode(o.result)) !== M) throw new Error(`run ${runId} did not return ${M}`);
  };
  const drive = async (n: number, conc: number) => {
    const lat: number[] = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: Math.min(conc, n) }, async () => {
        while (next++ < n) {
          const t = performance.now();
          await one();
          lat.push(performance.now() - t);
        }
      }),
    );
    return { lat: lat.sort((a, b) => a - b), wall: performance.now() - t0 };
  };
  try {
    await drive(10, 10);
    store.reset();
    const batches0 = queue.engineStats.walBatches;
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    const n = kind === "throughput" ? N_TP : N_LAT;
    const { lat, wall } = await drive(n, kind === "throughput" ? CONC : 1);
    const cpu = process.cpuUsage(cpu0);
    const elu = performance.eventLoopUtilization(elu0);
    const c = store.counts;
    const steps = n * M;
    const commits = queue.engineStats.walBatches - batches0;
    return {
      stepsPerSec: steps / (wall / 1000),
      stepP50: percentile(lat, 50) / M,
      stepP99: percentile(lat, 99) / M,
      requestsPerStep: (c.puts + c.gets + c.deletes + c.lists) / steps,
      putsPerStep: c.puts / steps,
      getsPerStep: c.gets / steps,
      commitsPerStep: commits / steps,
      bytesPerStep: c.bytesIn / steps,
      cpuPerStep: (cpu.user + cpu.system) / steps,
      systemPerStep: cpu.system / steps,
      busyPerStep: (elu.active * 1000) / steps,
    };
  } finally {
    await handle.shutdown();
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const f = (x: number, d = 2) => x.toFixed(d);

console.log(
  `N_TP=${N_TP} CONC=${CONC} N_LAT=${N_LAT} M=${M} REPEATS=${REPEATS} load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
console.log(
  "| store | throughput steps/s | per-step p50 | per-step p99 | store requests/step (throughput) | puts/step | gets/step | requests/step (one at a time) | engine commits/step (throughput) | engine commits/step (one at a time) | bytes put/step (throughput) | CPU µs/step (throughput) | of it system | main thread busy µs/step (throughput) | CPU µs/step (one at a time) |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const s of STORES) {
  const tp: Measured[] = [];
  const la: Measured[] = [];
  await measure("throughput", s);
  for (let i = 0; i < REPEATS; i++) tp.push(await measure("throughput", s));
  await measure("latency", s);
  for (let i = 0; i < REPEATS; i++) la.push(await measure("latency", s));
  const name = s === "local" ? `LocalStore (fsync${PUT_THREAD ? "" : ", put thread off"})` : "MemoryStore";
  console.log(
    `| ${name} | ${f(median(tp.map((m) => m.stepsPerSec)), 0)} (${tp.map((m) => f(m.stepsPerSec, 0)).join(" / ")}) | ${f(median(la.map((m) => m.stepP50)), 3)} ms | ${f(median(la.map((m) => m.stepP99)), 3)} ms | ${f(median(tp.map((m) => m.requestsPerStep)), 3)} | ${f(median(tp.map((m) => m.putsPerStep)), 3)} | ${f(median(tp.map((m) => m.getsPerStep)), 3)} | ${f(median(la.map((m) => m.requestsPerStep)), 3)} | ${f(median(tp.map((m) => m.commitsPerStep)), 3)} | ${f(median(la.map((m) => m.commitsPerStep)), 3)} | ${f(median(tp.map((m) => m.bytesPerStep)), 0)} | ${f(median(tp.map((m) => m.cpuPerStep)), 0)} | ${f(median(tp.map((m) => m.systemPerStep)), 0)} | ${f(median(tp.map((m) => m.busyPerStep)), 0)} | ${f(median(la.map((m) => m.cpuPerStep)), 0)} |`,
  );
}
console.log(
  `load at end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
