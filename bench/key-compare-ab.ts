/**
 * @module CPU of the engine paths that compare keys bytewise, of two or more
 * compiled checkouts, round by round in one process (so each runs under
 * the same load):
 *
 * - run merge: a k-way `RunMerge` of RUNS key runs of ENTRIES interleaved
 *   keys into one (what the memtable's freezes lead to while filling);
 * - open: `Engine.open` of a store of RUNS segment runs with paged values
 *   (open's k-way merge of the runs' key sections): the RUNS * ENTRIES keys,
 *   then RUNS - 1 runs of updates spread over them;
 * - lookups: LOOKUPS `get`s of paged values after that open (the key run's
 *   block search and the value pager's search in a cached block).
 *
 * Keys are shaped like the queue's (about 40 bytes sharing a 7-byte head,
 * then digits), values 64 bytes. Reported: CPU ns (user + system) per entry
 * or lookup, per round and checkout, and the medians after the first two
 * rounds.
 *
 * Run: `npm run build` in each checkout, then
 * `ROUNDS=10 npx tsx bench/key-compare-ab.ts <checkout A> <checkout B>`.
 */
import { median } from "./support/percentile.js";
import { loadCheckout } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";
import { pagedRunKey, pagedRunsOptions, pagedRunValue, writePagedRuns } from "./support/paged-runs.js";

type Taquba = typeof import("../runtime/index.js");
type KeyRuns = typeof import("../runtime/engine/key-run.js");
type RunMerges = typeof import("../runtime/engine/run-merge.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ROUNDS = env("ROUNDS", 10);
const RUNS = env("RUNS", 8);
const ENTRIES = env("ENTRIES", 50_000);
const LOOKUPS = env("LOOKUPS", 100_000);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const checkouts = await Promise.all(
  dirs.map(async (d) => ({
    dir: d,
    taquba: await loadCheckout<Taquba>(d),
    keyRuns: await loadCheckout<KeyRuns>(d, "dist/runtime/engine/key-run.js"),
    runMerges: await loadCheckout<RunMerges>(d, "dist/runtime/engine/run-merge.js"),
  })),
);
type Checkout = (typeof checkouts)[number];

/** Key `k` of the RUNS * ENTRIES keys; run `r` holds the keys with `k % RUNS === r`. */
const keyOf = pagedRunKey;
const value = pagedRunValue;
const total = RUNS * ENTRIES;
const cpuNs = (since: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) * 1000;
};

/** Each checkout's own key runs (its classes), built once. */
const keyRunsOf = new Map<Checkout, ReturnType<InstanceType<KeyRuns["KeyRunBuilder"]>["finish"]>[]>();
for (const c of checkouts) {
  const runs = [];
  for (let r = 0; r < RUNS; r++) {
    const b = new c.keyRuns.KeyRunBuilder(ENTRIES * 48, ENTRIES);
    for (let i = 0; i < ENTRIES; i++) b.add(keyOf(i * RUNS + r), value);
    runs.push(b.finish());
  }
  keyRunsOf.set(c, runs);
}

function runMerge(c: Checkout): number {
  const layers = keyRunsOf.get(c)!.map((run) => c.runMerges.layerOf(run));
  const t0 = process.cpuUsage();
  const m = new c.runMerges.RunMerge(layers);
  while (m.step(1 << 20));
  const out = m.finish();
  const ns = cpuNs(t0) / total;
  if (out?.run.count !== total) throw new Error("the merge lost entries");
  return ns;
}

// One store of RUNS segment runs, written by the first checkout; every checkout opens it.
const opts = pagedRunsOptions(RUNS);
const store = new checkouts[0]!.taquba.MemoryStore();
await writePagedRuns(checkouts[0]!.taquba, store, RUNS, ENTRIES);
/** Entries the open merges: every key, and the updates. */
const segmentEntries = total + (RUNS - 1) * Math.ceil(total / (2 * RUNS));
const lookupKeys = Array.from({ length: LOOKUPS }, (_, i) => keyOf((i * 7919) % total));

async function openAndLook(c: Checkout): Promise<{ open: number; lookups: number }> {
  let t0 = process.cpuUsage();
  const engine = await c.taquba.Engine.open(store, opts);
  const open = cpuNs(t0) / segmentEntries;
  // Every block read and cached first: the lookups then measure searches, not reads and decoding.
  for (let p = engine.warm(lookupKeys); p; p = engine.warm(lookupKeys)) await p;
  t0 = process.cpuUsage();
  let found = 0;
  for (const k of lookupKeys) if (engine.get(k) !== undefined) found++;
  const lookups = cpuNs(t0) / LOOKUPS;
  await engine.close();
  if (found !== LOOKUPS) throw new Error(`found ${found} of ${LOOKUPS} keys`);
  return { open, lookups };
}

console.log(`ROUNDS=${ROUNDS} RUNS=${RUNS} ENTRIES=${ENTRIES} LOOKUPS=${LOOKUPS} load ${loadAverageText()}`);
const results = checkouts.map(() => ({ merge: [] as number[], open: [] as number[], lookups: [] as number[] }));
for (let round = 0; round < ROUNDS; round++) {
  for (const [i, c] of checkouts.entries()) {
    const merge = runMerge(c);
    const { open, lookups } = await openAndLook(c);
    results[i]!.merge.push(merge);
    results[i]!.open.push(open);
    results[i]!.lookups.push(lookups);
    console.log(`round ${round} ${c.dir}: run merge ${merge.toFixed(1)} ns/entry, open ${open.toFixed(1)} ns/entry, lookups ${lookups.toFixed(1)} ns/get`);
  }
}
for (const [i, c] of checkouts.entries()) {
  const { merge, open, lookups } = results[i]!;
  const m = (xs: number[]) => median(xs.slice(2)).toFixed(1);
  console.log(`${c.dir}: medians run merge ${m(merge)} ns/entry, open ${m(open)} ns/entry, lookups ${m(lookups)} ns/get`);
}
console.log(`load at end ${loadAverageText()}`);
