/**
 * @module Cached paged reads alone, for a CPU profile: the store and keys of
 * `key-compare-ab.ts`'s lookups (support/paged-runs.ts: RUNS segment runs of paged 64-byte values,
 * keys shaped like the queue's), every block warmed into the cache first,
 * then ROUNDS rounds of LOOKUPS `get`s. Prints the CPU ns per get of each
 * round. Nothing else runs while the rounds do, so a profile's shares of
 * `Engine.get` are the cached read's.
 *
 * Run: `ROUNDS=10 node --cpu-prof --cpu-prof-dir=<dir> --import tsx bench/paged-get-profile.ts`
 * (the profile also holds the store's set-up; read the shares under `Engine.get`).
 */
import { Engine, MemoryStore, WriteBatch } from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { pagedRunKey, pagedRunsOptions, writePagedRuns } from "./support/paged-runs.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ROUNDS = env("ROUNDS", 10);
const RUNS = env("RUNS", 8);
const ENTRIES = env("ENTRIES", 50_000);
const LOOKUPS = env("LOOKUPS", 100_000);

const total = RUNS * ENTRIES;
const opts = pagedRunsOptions(RUNS);
const store = new MemoryStore();
await writePagedRuns({ Engine, WriteBatch }, store, RUNS, ENTRIES);
const keys = Array.from({ length: LOOKUPS }, (_, i) => pagedRunKey((i * 7919) % total));
const engine = await Engine.open(store, opts);
for (let p = engine.warm(keys); p; p = engine.warm(keys)) await p;
console.log(`ROUNDS=${ROUNDS} RUNS=${RUNS} ENTRIES=${ENTRIES} LOOKUPS=${LOOKUPS} load ${loadAverageText()}`);
for (let round = 0; round < ROUNDS; round++) {
  const t0 = process.cpuUsage();
  let found = 0;
  for (const k of keys) if (engine.get(k) !== undefined) found++;
  const c = process.cpuUsage(t0);
  if (found !== LOOKUPS) throw new Error(`found ${found} of ${LOOKUPS} keys`);
  console.log(`round ${round}: ${(((c.user + c.system) * 1000) / LOOKUPS).toFixed(0)} ns CPU per get`);
  // A turn between rounds, as between transactions (the cache trims on a later macrotask; its budget holds every block).
  await new Promise((resolve) => setImmediate(resolve));
}
await engine.close();
console.log(`load at end ${loadAverageText()}; cache hits ${engine.stats.cacheHits}`);
