/**
 * @module How often the take-back attack's workload
 * (test/engine/engine-take-back-attack.test.ts) starts a take-back, per
 * seed: the test's workload (the same batches, commits kept in flight,
 * checkpoints started beside them without waiting, the close and reopen,
 * the reads between batches with their value warm-ups), without its
 * checks. Per seed and workload it prints the take-backs, the batch of the
 * first (-1: none) and the batches written (up to `MAX_BATCHES` while none
 * came), with the state's grows and freezes. Whether a workload takes runs
 * back depends on where the racing checkpoints' paging lands, so a seed's
 * figure varies between runs and with the load.
 *
 * `SEEDS=1-40 MODE=paged|held WORKLOADS=1 npx tsx bench/take-back-starts.ts`
 * (`WORKLOADS`: how many of the seed's draws, as the test runs up to four).
 */
import { ClosedError, Engine, MemoryStore, WriteBatch } from "../runtime/index.js";
import { LayeredState } from "../runtime/engine/layered-state.js";
import { stateTuning } from "../runtime/engine/recovery.js";
import { seededRandom } from "../runtime/store/prng.js";
import { TAKE_BACK_RANGE, takeBackBatch } from "../test/engine/fixtures/take-back-batches.js";
import { loadAverageText } from "./support/load-average.js";

const BATCHES = 640;
const MAX_BATCHES = BATCHES * 4;
const MODES: Record<string, object> = {
  held: {},
  paged: { pageValues: { keyPrefixes: ["w/", "f/"], minBytes: 64, cacheBytes: 4096 }, segmentBlockBytes: 512 },
};

// Every state this process makes, watched through its writes as the test watches them (the engine's state is private).
const states: LayeredState[] = [];
const set = LayeredState.prototype.set;
const watched = new WeakSet<LayeredState>();
LayeredState.prototype.set = function (this: LayeredState, ...args: Parameters<LayeredState["set"]>) {
  if (!watched.has(this)) {
    watched.add(this);
    states.push(this);
  }
  return set.apply(this, args);
};
const sum = (name: "takeBacks" | "grows" | "freezes") => states.reduce((n, s) => n + s.counters[name], 0);

/** The test's reads between batches: every value warmed, then a whole scan. */
async function readAll(engine: Engine): Promise<void> {
  const keys = [...engine.keys()];
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
  for (const _ of engine.scan());
}

async function workload(int: (below: number) => number, mode: object): Promise<string> {
  const seed = int(2 ** 31);
  const store = new MemoryStore();
  const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0, maxSegmentRuns: 2, maxSegmentBytes: 8 * 1024, ...mode };
  states.length = 0;
  const closeAt = 200 + int(300);
  let engine = await Engine.open(store, opts);
  let inFlight: Promise<void>[] = [];
  const checkpoints: Promise<void>[] = [];
  let first = -1;
  let i = 0;
  for (; i < BATCHES || (first < 0 && i < MAX_BATCHES); i++) {
    const batch = new WriteBatch();
    for (const [k, v] of takeBackBatch(seed, i)) v === undefined ? batch.delete(k) : batch.put(k, v);
    inFlight.push(engine.commit(batch));
    if (int(12) === 0) {
      const life = engine;
      checkpoints.push(life.checkpoint().catch((e: unknown) => (e instanceof ClosedError && life.closed ? undefined : Promise.reject(e))));
    }
    if (inFlight.length >= 4 || i === closeAt) {
      await Promise.all(inFlight);
      inFlight = [];
    }
    if (int(40) === 0) await readAll(engine);
    if (first < 0 && sum("takeBacks") > 0) first = i;
    if (i === closeAt) {
      await engine.close();
      await Promise.all(checkpoints);
      engine = await Engine.open(store, opts);
    }
  }
  await Promise.all(inFlight);
  await Promise.all(checkpoints);
  const figures = `${sum("takeBacks")} take-backs, first at ${first}, ${i} batches, ${sum("grows")} grows, ${sum("freezes")} freezes`;
  await engine.close();
  return figures;
}

const [from, to] = (process.env.SEEDS ?? "1-10").split("-").map(Number) as [number, number];
const modeName = process.env.MODE ?? "paged";
const mode = MODES[modeName];
if (mode === undefined) throw new Error(`MODE must be one of ${Object.keys(MODES).join(", ")}`);
const workloads = Number(process.env.WORKLOADS ?? 1);
stateTuning.memtableRange = TAKE_BACK_RANGE;
console.log(`take-back starts: seeds ${from}-${to ?? from}, mode ${modeName}, ${workloads} workload(s) a seed, load ${loadAverageText()}`);
let none = 0;
let runs = 0;
for (let s = from; s <= (to ?? from); s++) {
  const random = seededRandom(s >>> 0);
  const int = (below: number) => Math.floor(random() * below);
  for (let w = 0; w < workloads; w++) {
    const figures = await workload(int, mode);
    runs++;
    if (figures.startsWith("0 ")) none++;
    console.log(`seed ${s} workload ${w + 1}: ${figures}`);
  }
}
console.log(`workloads with no take-back: ${none} of ${runs}; load ${loadAverageText()}`);
