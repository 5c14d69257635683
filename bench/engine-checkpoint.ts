/**
 * @module Checkpoint cost against a large state with a small change between
 * checkpoints: full checkpoints (`maxSegmentRuns: 1`, every checkpoint
 * rewrites the state) against incremental ones (the default).
 *
 * Loads KEYS keys (default 200000) of VALUE_BYTES (default 150) and
 * checkpoints them; then ROUNDS (default 12) times: CHANGES (default 2000)
 * keys are rewritten or deleted, and a checkpoint runs while COMMITTERS
 * (default 32) loops keep committing. Prints per mode the median and
 * longest checkpoint time and segment bytes written per checkpoint, the
 * longest event-loop delay and the commit p99 while checkpoints ran, the
 * full checkpoints (counting the initial one), and the reopen time after
 * the last round (the runs a reopen has to merge), with its CPU time and
 * minor page faults (the fresh pages it touched), which the machine's load
 * moves far less than its wall time. Each checkpoint's CPU time (the
 * process's, so the committers' share while it ran is in it: COMMITTERS=0
 * leaves the checkpoint's alone) is printed as its median too, and the
 * collector's pauses that began while it ran. MODES
 * (default "full,incremental") picks the modes run, in that order.
 */
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { Engine, MemoryStore, WriteBatch } from "../runtime/index.js";
import { percentile } from "./support/percentile.js";

const env = (name: string, dflt: number) => (process.env[name] === undefined ? dflt : Number(process.env[name]));
const KEYS = env("KEYS", 200_000);
const VALUE_BYTES = env("VALUE_BYTES", 150);
const ROUNDS = env("ROUNDS", 12);
const CHANGES = env("CHANGES", 2000);
const COMMITTERS = env("COMMITTERS", 32);
const MODES = (process.env.MODES ?? "full,incremental").split(",") as ("full" | "incremental")[];

const key = (i: number) => `q/jobs/${String(i).padStart(10, "0")}`;

/** The collector's pauses (start and length in ms), to sum those that began while a checkpoint ran. */
const gcPauses: [number, number][] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcPauses.push([e.startTime, e.duration]);
}).observe({ entryTypes: ["gc"] });
const gcBetween = (from: number, to: number) => gcPauses.reduce((n, [at, ms]) => (at >= from && at < to ? n + ms : n), 0);

async function run(mode: "full" | "incremental"): Promise<void> {
  const store = new MemoryStore();
  const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0, maxSegmentRuns: mode === "full" ? 1 : 8 };
  const engine = await Engine.open(store, opts);
  const value = new Uint8Array(VALUE_BYTES).fill(3);
  for (let i = 0; i < KEYS; i += 1000) {
    const b = new WriteBatch();
    for (let j = i; j < Math.min(KEYS, i + 1000); j++) b.put(key(j), value);
    await engine.commit(b, { durable: false });
  }
  await engine.checkpoint();
  let x = 12345;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648) >>> 8;
  const cpMs: number[] = [];
  const cpCpuMs: number[] = [];
  const cpSpans: [number, number][] = [];
  const commitMs: number[] = [];
  let maxTurn = 0;
  const written: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < CHANGES; i += 100) {
      const b = new WriteBatch();
      for (let j = 0; j < 100; j++) {
        const n = next();
        if (n % 4 === 0) b.delete(key(n % KEYS));
        else b.put(key(n % KEYS), value);
      }
      await engine.commit(b, { durable: false });
    }
    await engine.flush();
    let checkpointing = true;
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    const committers = Array.from({ length: COMMITTERS }, async () => {
      while (checkpointing) {
        const t = performance.now();
        await engine.commit(new WriteBatch().put(`other/${next() % 1000}`, value));
        commitMs.push(performance.now() - t);
      }
    });
    const t0 = performance.now();
    const cpuBefore = process.cpuUsage();
    const bytesBefore = engine.stats.checkpointBytes;
    await engine.checkpoint();
    cpMs.push(performance.now() - t0);
    cpSpans.push([t0, performance.now()]);
    const cpuUsed = process.cpuUsage(cpuBefore);
    cpCpuMs.push((cpuUsed.user + cpuUsed.system) / 1000);
    written.push(engine.stats.checkpointBytes - bytesBefore);
    loopDelay.disable();
    maxTurn = Math.max(maxTurn, loopDelay.max / 1e6);
    checkpointing = false;
    await Promise.all(committers);
  }
  const stats = engine.stats;
  await engine.close();
  // Observer entries arrive after the pause: by now every checkpoint's are in.
  await new Promise((resolve) => setImmediate(resolve));
  const cpGcMs = cpSpans.map(([from, to]) => gcBetween(from, to)).sort((a, b) => a - b);
  gcPauses.length = 0;
  const faults0 = process.resourceUsage().minorPageFault;
  const cpu0 = process.cpuUsage();
  const t1 = performance.now();
  const reopened = await Engine.open(store, opts);
  const reopenMs = performance.now() - t1;
  const cpu = process.cpuUsage(cpu0);
  const reopenCpuMs = (cpu.user + cpu.system) / 1000;
  const reopenFaults = process.resourceUsage().minorPageFault - faults0;
  await reopened.close();
  commitMs.sort((a, b) => a - b);
  cpMs.sort((a, b) => a - b);
  cpCpuMs.sort((a, b) => a - b);
  written.sort((a, b) => a - b);
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  console.log(
    `| ${mode} | ${percentile(cpMs, 50).toFixed(1)} ms / ${cpMs[cpMs.length - 1]!.toFixed(1)} ms | ${percentile(cpCpuMs, 50).toFixed(1)} ms (GC ${percentile(cpGcMs, 50).toFixed(1)} ms) | ${kib(percentile(written, 50))} / ${kib(written[written.length - 1]!)} | ${maxTurn.toFixed(1)} ms | ${percentile(commitMs, 99).toFixed(2)} ms | ${stats.compactions} | ${stats.segmentRuns} | ${reopenMs.toFixed(0)} ms (CPU ${reopenCpuMs.toFixed(0)} ms, ${reopenFaults} page faults) |`,
  );
}

console.log(
  `engine-checkpoint: KEYS=${KEYS} VALUE_BYTES=${VALUE_BYTES} ROUNDS=${ROUNDS} CHANGES=${CHANGES} COMMITTERS=${COMMITTERS} store=MemoryStore, node ${process.version}`,
);
console.log(
  "| checkpoints | checkpoint time p50 / max | checkpoint CPU p50 (GC pauses) | written per checkpoint p50 / max | longest loop delay | commit p99 during | full checkpoints | runs at end | reopen (CPU, page faults) |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const mode of MODES) await run(mode);
