/**
 * @module The reopen after a full checkpoint (as bench/engine-checkpoint.ts
 * ends), by two or more compiled checkouts, round by round in one process
 * so each runs under the same load. Each checkout fills its own MemoryStore
 * once (KEYS keys of VALUE_BYTES, `maxSegmentRuns: 1`, one checkpoint: a
 * single segment run); then every round, checkouts alternating, loads its
 * segments (`loadSegments`, the open's build of its runs) and opens an
 * engine over it (`Engine.open`, then `close`). Reported per round and
 * checkout: CPU ms (user + system) and wall ms of the segments' load, wall
 * ms of the whole open, and the minor page faults of the load (the fresh
 * pages it touched: a deterministic measure where CPU time is noisy); then
 * the medians of the rounds after the first.
 *
 * `npm run build` in each checkout, then
 * `KEYS=200000 VALUE_BYTES=150 ROUNDS=10 node --expose-gc --import tsx bench/reopen-full-ab.ts <checkout A> <checkout B>`.
 */
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";
import { loadCheckout } from "./support/step-workload.js";

type Recovery = typeof import("../runtime/engine/recovery.js");
type Runtime = typeof import("../runtime/index.js");

const env = (name: string, dflt: number) => (process.env[name] === undefined ? dflt : Number(process.env[name]));
const KEYS = env("KEYS", 200_000);
const VALUE_BYTES = env("VALUE_BYTES", 150);
const ROUNDS = env("ROUNDS", 10);
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");

const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0, maxSegmentRuns: 1 };
const retry = { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 };
const key = (i: number) => `q/jobs/${String(i).padStart(10, "0")}`;

interface Checkout {
  dir: string;
  recovery: Recovery;
  runtime: Runtime;
  store: InstanceType<Runtime["MemoryStore"]>;
}

async function filled(runtime: Runtime): Promise<InstanceType<Runtime["MemoryStore"]>> {
  const store = new runtime.MemoryStore();
  const engine = await runtime.Engine.open(store, opts);
  const value = new Uint8Array(VALUE_BYTES).fill(3);
  for (let i = 0; i < KEYS; i += 1000) {
    const b = new runtime.WriteBatch();
    for (let j = i; j < Math.min(KEYS, i + 1000); j++) b.put(key(j), value);
    await engine.commit(b, { durable: false });
  }
  await engine.checkpoint();
  await engine.close();
  return store;
}

const checkouts: Checkout[] = [];
for (const dir of dirs) {
  const runtime = await loadCheckout<Runtime>(dir, "dist/runtime/index.js");
  const recovery = await loadCheckout<Recovery>(dir, "dist/runtime/engine/recovery.js");
  checkouts.push({ dir, runtime, recovery, store: await filled(runtime) });
}

interface Figures {
  loadCpu: number;
  /** Minor page faults of the load: fresh pages it touched (4 KiB each). */
  faults: number;
  loadWall: number;
  openWall: number;
}

async function once(c: Checkout): Promise<Figures> {
  const ctx = { store: c.store, prefix: "", retry };
  const manifest = await c.recovery.readNewestManifest(ctx);
  if (manifest === undefined) throw new Error("no manifest");
  gc!();
  const faults0 = process.resourceUsage().minorPageFault;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const state = await c.recovery.loadSegments(ctx, manifest);
  const loadWall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const faults = process.resourceUsage().minorPageFault - faults0;
  if (state === undefined || state.size !== KEYS) throw new Error(`loaded ${state?.size} keys, expected ${KEYS}`);
  (state as { stopIdleMerges?: () => void }).stopIdleMerges?.();
  gc!();
  const t1 = performance.now();
  const engine = await c.runtime.Engine.open(c.store, opts);
  const openWall = performance.now() - t1;
  await engine.close();
  return { loadCpu: (cpu.user + cpu.system) / 1000, faults, loadWall, openWall };
}

const results = checkouts.map(() => [] as Figures[]);
console.log(`reopen-full-ab: KEYS=${KEYS} VALUE_BYTES=${VALUE_BYTES} ROUNDS=${ROUNDS}, node ${process.version}, checkouts ${dirs.join(", ")}`);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? checkouts.map((_, i) => i) : checkouts.map((_, i) => checkouts.length - 1 - i);
  for (const i of order) {
    const f = await once(checkouts[i]!);
    results[i]!.push(f);
    console.log(
      `round ${round} ${dirs[i]}: load CPU ${f.loadCpu.toFixed(0)} ms, ${f.faults} page faults, load wall ${f.loadWall.toFixed(0)} ms, Engine.open ${f.openWall.toFixed(0)} ms; load ${loadAverageText()}`,
    );
  }
}
for (const [i, rs] of results.entries()) {
  const later = rs.slice(1);
  const med = (pick: (f: Figures) => number) => median(later.map(pick));
  console.log(
    `median of rounds 1-${ROUNDS - 1}, ${dirs[i]}: load CPU ${med((f) => f.loadCpu).toFixed(0)} ms, ${med((f) => f.faults).toFixed(0)} page faults, load wall ${med((f) => f.loadWall).toFixed(0)} ms, Engine.open ${med((f) => f.openWall).toFixed(0)} ms`,
  );
}
