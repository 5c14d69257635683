/**
 * @module The walk a full checkpoint makes over a state's snapshot
 * (`SnapshotMerge.step`, no segment written), for two or more compiled
 * checkouts alternating in one process: each builds the same state (KEYS
 * keys of VALUE_BYTES written in key order as a fill does, with MEMTABLE
 * keys per memtable, then CHANGES seeded rewrites and deletes), then the
 * walks alternate WALKS times, checkout by checkout. Prints per checkout the
 * state's runs, the entries walked, and the median and lowest CPU time of a
 * walk.
 *
 * Run: `npm run build` in each checkout, then
 * `npx tsx bench/snapshot-merge-ab.ts <checkout A> <checkout B>`.
 */
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { median } from "./support/percentile.js";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const KEYS = env("KEYS", 200_000);
const VALUE_BYTES = env("VALUE_BYTES", 150);
const CHANGES = env("CHANGES", 2000);
const MEMTABLE = env("MEMTABLE", 32_768);
const WALKS = env("WALKS", 15);

interface Snapshot {
  entries(): { step(): number };
}
interface State {
  set(key: string, value: Uint8Array): void;
  delete(key: string): void;
  snapshot(): Snapshot;
  readonly runCount?: number;
}
type StateModule = { LayeredState: new (opts: object) => State };

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const key = (i: number) => `q/jobs/${String(i).padStart(10, "0")}`;
const states: State[] = [];
for (const d of dirs) {
  const m = (await import(pathToFileURL(resolve(d, "dist/runtime/engine/layered-state.js")).href)) as StateModule;
  const state = new m.LayeredState({ memtableKeys: MEMTABLE, idleSlice: 0 });
  const value = new Uint8Array(VALUE_BYTES).fill(3);
  for (let i = 0; i < KEYS; i++) state.set(key(i), value);
  let x = 12345;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648) >>> 8;
  for (let i = 0; i < CHANGES; i++) {
    const n = next();
    if (n % 4 === 0) state.delete(key(n % KEYS));
    else state.set(key(n % KEYS), value);
  }
  states.push(state);
}
console.log(
  `snapshot-merge-ab: KEYS=${KEYS} VALUE_BYTES=${VALUE_BYTES} CHANGES=${CHANGES} MEMTABLE=${MEMTABLE} WALKS=${WALKS}, node ${process.version}; load ${loadAverageText()}`,
);
const cpu: number[][] = dirs.map(() => []);
const walked: number[] = dirs.map(() => 0);
for (let w = 0; w < WALKS; w++) {
  for (let i = 0; i < dirs.length; i++) {
    const merge = states[i]!.snapshot().entries();
    const c0 = process.cpuUsage();
    let n = 0;
    while (merge.step() !== -2) n++;
    const used = process.cpuUsage(c0);
    cpu[i]!.push((used.user + used.system) / 1000);
    walked[i] = n;
  }
}
for (let i = 0; i < dirs.length; i++) {
  const sorted = [...cpu[i]!].sort((a, b) => a - b);
  console.log(
    `${dirs[i]}: ${walked[i]} entries, walk CPU median ${median(sorted).toFixed(1)} ms, lowest ${sorted[0]!.toFixed(1)} ms (${((median(sorted) * 1e6) / walked[i]!).toFixed(0)} ns/entry); load ${loadAverageText()}`,
  );
}
