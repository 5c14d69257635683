/**
 * @module The memtable's map of two or more compiled checkouts, operation by
 * operation, alternating checkouts round by round in one process so each
 * runs under the same load. Keys shaped as the engine's: job records,
 * queue entries and workflow history, 22-50 ASCII characters sharing long
 * prefixes. Per round and checkout, on a table of K keys: inserts in random
 * order, gets of present keys, gets of absent ones, overwrites of present
 * keys, a clone then overwrites (the copy-on-write path), scans of 10
 * entries from random bounds forward and reversed, deletes of every key.
 * Reported: CPU ns per operation, the median of the rounds after the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `K=20000 ROUNDS=10 npx tsx bench/memtable-map-ab.ts <checkout A> <checkout B>`.
 */
import { loadCheckout } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";
import { seededRandom } from "../runtime/store/prng.js";

type MemtableModule = typeof import("../runtime/engine/memtable.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const K = env("K", 20_000);
const ROUNDS = env("ROUNDS", 10);
/** Rounds left out of the medians: the first ones run while the code is still being compiled. */
const WARMUP_ROUNDS = 2;
if (!Number.isInteger(ROUNDS) || ROUNDS <= WARMUP_ROUNDS)
  throw new Error(`ROUNDS must be an integer above ${WARMUP_ROUNDS} (the first ${WARMUP_ROUNDS} are warm-ups), got ${ROUNDS}`);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: MemtableModule[] = [];
for (const d of dirs) mods.push(await loadCheckout<MemtableModule>(d, "dist/runtime/engine/memtable.js"));

// Seeded, so every checkout gets the same keys in the same order.
const rand = seededRandom(7);
const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(6, "0")}`;
const families = [(n: number) => `j/${id(n)}`, (n: number) => `q/default/0/${id(n)}`, (n: number) => `u/workflow/history/workflow-steps/${id(n)}/0003`];
const keys = Array.from({ length: K }, (_, i) => families[i % 3]!(i * 7919));
const absent = keys.map((k) => `${k}x`);
const shuffled = [...keys];
for (let i = shuffled.length - 1; i > 0; i--) {
  const j = Math.floor(rand() * (i + 1));
  [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
}
const value = new Uint8Array(64);
const other = new Uint8Array(64);

const PHASES = ["insert", "get", "get absent", "overwrite", "clone+overwrite", "scan 10", "scan 10 reversed", "delete"] as const;
type Phase = (typeof PHASES)[number];

/** CPU time of `fn` in ns (user + system): under load, wall time counts the turns other processes take. */
function time(fn: () => void): number {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) * 1000;
}

let sink = 0;
function round(m: MemtableModule): Record<Phase, number> {
  const t = new m.Memtable<Uint8Array>();
  const r: Partial<Record<Phase, number>> = {};
  r.insert =
    time(() => {
      for (const k of shuffled) t.set(k, value);
    }) / K;
  r.get =
    time(() => {
      for (const k of keys) if (t.get(k) !== undefined) sink++;
    }) / K;
  r["get absent"] =
    time(() => {
      for (const k of absent) if (t.get(k) !== undefined) sink++;
    }) / K;
  r.overwrite =
    time(() => {
      for (const k of keys) t.set(k, other);
    }) / K;
  r["clone+overwrite"] =
    time(() => {
      const snapshot = t.tree.clone();
      for (const k of shuffled) t.replace(k, value);
      sink += snapshot.size;
    }) / K;
  const scans = K >> 2;
  r["scan 10"] =
    time(() => {
      for (let i = 0; i < scans; i++) {
        const it = t.tree.entries(absent[(i * 13) % K]);
        for (let n = 0; n < 10 && !it.next().done; n++) sink++;
      }
    }) / scans;
  r["scan 10 reversed"] =
    time(() => {
      for (let i = 0; i < scans; i++) {
        const it = t.tree.entriesReversed(absent[(i * 13) % K]);
        for (let n = 0; n < 10 && !it.next().done; n++) sink++;
      }
    }) / scans;
  r.delete =
    time(() => {
      for (const k of shuffled) t.delete(k);
    }) / K;
  if (t.size !== 0) throw new Error("the table is not empty after deleting every key");
  return r as Record<Phase, number>;
}

console.log(`K=${K} ROUNDS=${ROUNDS}; load ${loadAverageText()}`);
const results: Record<Phase, number>[][] = mods.map(() => []);
for (let i = 0; i < ROUNDS; i++) {
  // Alternating which checkout goes first, so neither always runs after the other's garbage.
  const order = i % 2 === 0 ? mods.map((_, j) => j) : mods.map((_, j) => mods.length - 1 - j);
  for (const j of order) results[j]!.push(round(mods[j]!));
}
console.log(["CPU ns/op", ...dirs].join("\t"));
for (const p of PHASES) {
  const meds = results.map((rs) => median(rs.slice(WARMUP_ROUNDS).map((r) => r[p])));
  console.log([p.padEnd(18), ...meds.map((x, j) => `${x.toFixed(0)}${j > 0 ? ` (${(x / meds[0]!).toFixed(2)}x)` : ""}`)].join("\t"));
}
console.log(`load ${loadAverageText()} (sink ${sink > 0})`);
