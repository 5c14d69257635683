/**
 * @module Full and incremental checkpoints of a large state, and the reopen
 * after them, for two or more compiled checkouts, round by round in one
 * process (every checkout under the same load): the figures of
 * bench/engine-checkpoint.ts without its committers, so a checkpoint's own
 * cost shows.
 *
 * Each argument is a checkout built with `npm run build` (its `dist/` is
 * loaded). Per round and checkout, for each mode (full: `maxSegmentRuns: 1`,
 * every checkpoint rewrites the state; incremental: the default runs): an
 * engine on a fresh MemoryStore with automatic checkpoints off commits KEYS
 * keys of VALUE_BYTES (in batches of 1,000) and checkpoints them (untimed);
 * then CHECKPOINTS times: CHANGES keys rewritten or deleted (seeded), and a
 * timed `checkpoint()` (wall and CPU, and the scavenges the collector ran
 * meanwhile: young-generation collections, a measure of what it allocated);
 * then the engine closes and the store is opened again (timed). Reported per
 * round: each mode's checkpoint p50 and max, CPU per checkpointed key, the
 * scavenges per checkpoint and the reopen; at the end the medians over the
 * rounds after the first (the JIT warms up in it).
 *
 * Run: `npm run build` in each checkout, then
 * `ROUNDS=5 npx tsx bench/checkpoint-full-ab.ts <checkout A> <checkout B>`.
 * With ALLOC=1 the heap bytes each checkpoint allocated are sampled (the
 * inspector's sampling heap profiler, every 256 B, objects collected since
 * included) and reported per checkpointed key.
 * With PROFILE=<dir> and one checkout, the timed full checkpoints alone are
 * CPU-profiled into <dir>/full-<n>.cpuprofile, and the reopen after them into
 * <dir>/full-reopen.cpuprofile (read with bench/cpu-profile-shares.ts).
 * MODES (default "full,incremental") picks the modes measured.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { median, percentile } from "./support/percentile.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const KEYS = env("KEYS", 200_000);
const VALUE_BYTES = env("VALUE_BYTES", 150);
const CHANGES = env("CHANGES", 2000);
const CHECKPOINTS = env("CHECKPOINTS", 6);
const ROUNDS = env("ROUNDS", 5);
const PROFILE = process.env.PROFILE;
/** Mean bytes between allocation samples (ALLOC=1). */
const ALLOC_INTERVAL = 256;

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
if (PROFILE !== undefined && dirs.length !== 1) throw new Error("PROFILE takes one checkout");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout(d));

let scavenges = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === 1) scavenges++;
}).observe({ entryTypes: ["gc"] });

const key = (i: number) => `q/jobs/${String(i).padStart(10, "0")}`;

interface ModeFigures {
  p50: number;
  max: number;
  cpuUsPerKey: number;
  scavenges: number;
  /** Heap bytes allocated per checkpointed key (ALLOC=1 only: sampled, collected objects included). */
  allocBytesPerKey: number;
  reopenMs: number;
}

async function measure(T: Taquba, mode: "full" | "incremental", session: Session | undefined): Promise<ModeFigures> {
  const store = new T.MemoryStore();
  const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0, maxSegmentRuns: mode === "full" ? 1 : 8 };
  const engine = await T.Engine.open(store, opts);
  const value = new Uint8Array(VALUE_BYTES).fill(3);
  for (let i = 0; i < KEYS; i += 1000) {
    const b = new T.WriteBatch();
    for (let j = i; j < Math.min(KEYS, i + 1000); j++) b.put(key(j), value);
    await engine.commit(b, { durable: false });
  }
  await engine.checkpoint();
  let x = 12345;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648) >>> 8;
  const ms: number[] = [];
  let cpu = 0;
  let scav = 0;
  let allocated = 0;
  for (let c = 0; c < CHECKPOINTS; c++) {
    for (let i = 0; i < CHANGES; i += 100) {
      const b = new T.WriteBatch();
      for (let j = 0; j < 100; j++) {
        const n = next();
        if (n % 4 === 0) b.delete(key(n % KEYS));
        else b.put(key(n % KEYS), value);
      }
      await engine.commit(b, { durable: false });
    }
    await engine.flush();
    if (session !== undefined) await session.post("Profiler.start");
    if (allocSession !== undefined) {
      await allocSession.post("HeapProfiler.startSampling", {
        samplingInterval: ALLOC_INTERVAL,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      } as never);
    }
    const s0 = scavenges;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await engine.checkpoint();
    ms.push(performance.now() - t0);
    const used = process.cpuUsage(c0);
    if (allocSession !== undefined) {
      const { profile } = await allocSession.post("HeapProfiler.stopSampling");
      // A sample caught an allocation of `size` bytes with chance 1 - e^(-size/interval): it stands for size over that
      // chance (V8's own scaling of its sampled profiles). The typings omit `samples`.
      const { samples } = profile as unknown as { samples: { size: number }[] };
      for (const x of samples) allocated += x.size / (1 - Math.exp(-x.size / ALLOC_INTERVAL));
    }
    cpu += used.user + used.system;
    if (session !== undefined) {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(join(PROFILE!, `${mode}-${c}.cpuprofile`), JSON.stringify(profile));
    }
    // The observer hears of collections a turn later.
    await new Promise((r) => setImmediate(r));
    scav += scavenges - s0;
  }
  await engine.close();
  if (session !== undefined) await session.post("Profiler.start");
  const t1 = performance.now();
  const reopened = await T.Engine.open(store, opts);
  const reopenMs = performance.now() - t1;
  if (session !== undefined) {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(join(PROFILE!, `${mode}-reopen.cpuprofile`), JSON.stringify(profile));
  }
  await reopened.close();
  ms.sort((a, b) => a - b);
  const keysPerCheckpoint = mode === "full" ? KEYS : CHANGES;
  return {
    p50: percentile(ms, 50),
    max: ms[ms.length - 1]!,
    cpuUsPerKey: cpu / CHECKPOINTS / keysPerCheckpoint,
    scavenges: scav / CHECKPOINTS,
    allocBytesPerKey: allocated / CHECKPOINTS / keysPerCheckpoint,
    reopenMs,
  };
}

const session = PROFILE === undefined ? undefined : new Session();
const allocSession = process.env.ALLOC === "1" ? new Session() : undefined;
if (allocSession !== undefined) {
  allocSession.connect();
  await allocSession.post("HeapProfiler.enable");
}
if (session !== undefined) {
  session.connect();
  await session.post("Profiler.enable");
}

console.log(
  `checkpoint-full-ab: KEYS=${KEYS} VALUE_BYTES=${VALUE_BYTES} CHANGES=${CHANGES} CHECKPOINTS=${CHECKPOINTS} ROUNDS=${ROUNDS} MemoryStore, node ${process.version}; load ${loadAverageText()}`,
);
const modes = (process.env.MODES ?? "full,incremental").split(",") as ("full" | "incremental")[];
const rounds: ModeFigures[][][] = dirs.map(() => modes.map(() => []));
const show = (f: ModeFigures) =>
  `p50 ${f.p50.toFixed(0)} ms, max ${f.max.toFixed(0)} ms, CPU ${f.cpuUsPerKey.toFixed(2)} µs/key, ${f.scavenges.toFixed(1)} scavenges,${allocSession === undefined ? "" : ` ${f.allocBytesPerKey.toFixed(0)} B allocated/key,`} reopen ${f.reopenMs.toFixed(0)} ms`;
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < dirs.length; i++) {
    for (let m = 0; m < modes.length; m++) {
      const f = await measure(mods[i]!, modes[m]!, modes[m] === "full" ? session : undefined);
      rounds[i]![m]!.push(f);
      console.log(`round ${r + 1} ${dirs[i]} ${modes[m]}: ${show(f)}; load ${loadAverageText()}`);
    }
  }
}
for (let i = 0; i < dirs.length && ROUNDS > 1; i++) {
  for (let m = 0; m < modes.length; m++) {
    const kept = rounds[i]![m]!.slice(1);
    const med = (pick: (f: ModeFigures) => number) => median(kept.map(pick));
    console.log(
      `median of rounds 2-${ROUNDS} ${dirs[i]} ${modes[m]}: ${show({
        p50: med((f) => f.p50),
        max: med((f) => f.max),
        cpuUsPerKey: med((f) => f.cpuUsPerKey),
        scavenges: med((f) => f.scavenges),
        allocBytesPerKey: med((f) => f.allocBytesPerKey),
        reopenMs: med((f) => f.reopenMs),
      })}`,
    );
  }
}
session?.disconnect();
allocSession?.disconnect();
