/**
 * @module A writer's load of one store (its segment runs merged into one key
 * run, then the WAL since its last checkpoint replayed), by two or more
 * compiled checkouts, round by round in one process so each runs under the
 * same load: `loadSegments` alone, then the whole `loadState` (segments and
 * replay) as a writer's open runs it (the queue's paging policy, the delta
 * tracked). Nothing is written, so every round reads the same store.
 * Reported per round and checkout: CPU ms (user + system) of the segments'
 * load and of the whole, wall ms of the whole, and the longest gap between
 * the ticks of a 5 ms timer during the whole (the event loop's longest block
 * plus up to 5 ms); then the medians of the rounds after the first.
 *
 * Make the store with bench/engine-memory.ts (`STORE_DIR=<dir> FILL_ONLY=1`,
 * bundled as bench/RESULTS.md says), `npm run build` in each checkout, then
 * `STORE_DIR=<dir> ROUNDS=8 node --expose-gc --import tsx bench/open-load-ab.ts <checkout A> <checkout B>`.
 * PREFIX is the engine's key prefix in the store (default `mem/db/`, the
 * queue "mem" of that benchmark).
 */
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";
import { loadCheckout } from "./support/step-workload.js";

type Recovery = typeof import("../runtime/engine/recovery.js");
type Runtime = typeof import("../runtime/index.js");

const ROUNDS = Number(process.env.ROUNDS ?? 8);
const STORE_DIR = process.env.STORE_DIR;
const PREFIX = process.env.PREFIX ?? "mem/db/";
if (STORE_DIR === undefined) throw new Error("STORE_DIR names the directory of a filled store");
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const gc = (globalThis as { gc?: () => void }).gc;

const checkouts: { dir: string; recovery: Recovery; runtime: Runtime }[] = [];
for (const dir of dirs) {
  checkouts.push({
    dir,
    recovery: await loadCheckout<Recovery>(dir, "dist/runtime/engine/recovery.js"),
    runtime: await loadCheckout<Runtime>(dir, "dist/runtime/index.js"),
  });
}
const policy = { keyPrefixes: ["j/"], minBytes: 64 };
const retry = { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 };

/** The longest gap between ticks of a 5 ms timer until `stop` is called. */
function watchLoop(): () => number {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 5);
  return () => {
    clearInterval(timer);
    return Math.max(longest, performance.now() - last);
  };
}

interface Figures {
  segmentsCpu: number;
  wholeCpu: number;
  wholeWall: number;
  block: number;
}

async function once(c: (typeof checkouts)[number]): Promise<Figures> {
  const ctx = { store: new c.runtime.LocalStore(STORE_DIR!), prefix: PREFIX, retry };
  const manifest = await c.recovery.readNewestManifest(ctx);
  if (manifest === undefined) throw new Error(`no manifest under ${PREFIX} in ${STORE_DIR}`);
  gc?.();
  let cpu0 = process.cpuUsage();
  const segs = await c.recovery.loadSegments(ctx, manifest, undefined, policy);
  let cpu = process.cpuUsage(cpu0);
  const segmentsCpu = (cpu.user + cpu.system) / 1000;
  segs?.stopIdleMerges();
  gc?.();
  const stop = watchLoop();
  const t0 = performance.now();
  cpu0 = process.cpuUsage();
  const loaded = await c.recovery.loadState(ctx, { trackDelta: true, checkSegments: true, policy });
  cpu = process.cpuUsage(cpu0);
  const wholeWall = performance.now() - t0;
  const block = stop();
  if (loaded === undefined) throw new Error("the store changed while loading");
  loaded.tree.stopIdleMerges();
  return { segmentsCpu, wholeCpu: (cpu.user + cpu.system) / 1000, wholeWall, block };
}

const results = checkouts.map(() => [] as Figures[]);
console.log(`open-load-ab: ${STORE_DIR} (prefix ${PREFIX}), ${ROUNDS} rounds, checkouts ${dirs.join(", ")}`);
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which checkout goes first.
  const order = round % 2 === 0 ? checkouts.map((_, i) => i) : checkouts.map((_, i) => checkouts.length - 1 - i);
  for (const i of order) {
    const f = await once(checkouts[i]!);
    results[i]!.push(f);
    console.log(
      `round ${round} ${dirs[i]}: segments CPU ${f.segmentsCpu.toFixed(0)} ms, whole CPU ${f.wholeCpu.toFixed(0)} ms, wall ${f.wholeWall.toFixed(0)} ms, longest gap ${f.block.toFixed(0)} ms; ${loadAverageText()}`,
    );
  }
}
for (const [i, rs] of results.entries()) {
  const later = rs.slice(1);
  const med = (pick: (f: Figures) => number) => median(later.map(pick)).toFixed(0);
  console.log(
    `median of rounds 1-${ROUNDS - 1}, ${dirs[i]}: segments CPU ${med((f) => f.segmentsCpu)} ms, whole CPU ${med((f) => f.wholeCpu)} ms, replay CPU ${med((f) => f.wholeCpu - f.segmentsCpu)} ms, wall ${med((f) => f.wholeWall)} ms, longest gap ${med((f) => f.block)} ms`,
  );
}
