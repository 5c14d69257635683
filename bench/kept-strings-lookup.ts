/**
 * @module The cost of looking caller keys up among the kept ones
 * (`KeptStrings`, runtime/queue/kept-strings.ts) in two checkouts, loaded
 * through tsx (no build), alternating in one process: 2,048 kept run-record
 * keys (`workflow/runs/{q}/{runId}`), then lookups of new outcome keys
 * (`workflow/outcomes/{q}/{runId}`, built fresh, a miss) and of the kept
 * keys built fresh (a hit), ROUNDS times. Prints CPU ns per lookup.
 *
 * Run: `ROUNDS=5 npx tsx bench/kept-strings-lookup.ts <checkout A> <checkout B>`.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more checkouts");
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const LOOKUPS = 200_000;

interface Kept {
  get(name: string): string | undefined;
  keep(name: string, value: string): string;
}
type KeptClass = new (generation: number) => Kept;
const classes: KeptClass[] = [];
for (const d of dirs) classes.push(((await import(pathToFileURL(resolve(d, "runtime/queue/kept-strings.ts")).href)) as { KeptStrings: KeptClass }).KeptStrings);

// Seeded, so every checkout looks up the same keys.
let seed = 1;
const next = () => (seed = (seed * 48271) % 2147483647);
const ulid = () => `01J${next().toString(36).toUpperCase().padEnd(23, "X")}`;
const keptIds = Array.from({ length: 2048 }, ulid);
const newIds = Array.from({ length: LOOKUPS }, ulid);

function pass(K: KeptClass): { miss: number; hit: number } {
  const kept = new K(1024);
  for (const id of keptIds) kept.keep(`workflow/runs/workflow-steps/${id}`, `u/workflow/runs/workflow-steps/${id}`);
  let found = 0;
  const c0 = process.cpuUsage();
  for (const id of newIds) if (kept.get(`workflow/outcomes/workflow-steps/${id}`) !== undefined) found++;
  const c1 = process.cpuUsage(c0);
  const c2 = process.cpuUsage();
  for (let i = 0; i < LOOKUPS; i++) if (kept.get(`workflow/runs/workflow-steps/${keptIds[1024 + (i % 1024)]}`) !== undefined) found++;
  const c3 = process.cpuUsage(c2);
  if (found !== LOOKUPS) throw new Error(`expected ${LOOKUPS} hits and no other, got ${found}`);
  const ns = (c: NodeJS.CpuUsage) => ((c.user + c.system) * 1000) / LOOKUPS;
  return { miss: ns(c1), hit: ns(c3) };
}

console.log(`ROUNDS=${ROUNDS} lookups=${LOOKUPS} load ${loadAverageText()}`);
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < classes.length; i++) {
    const { miss, hit } = pass(classes[i]!);
    console.log(`round ${r} ${dirs[i]}: miss ${miss.toFixed(0)} ns, hit ${hit.toFixed(0)} ns`);
  }
}
console.log(`load at end ${loadAverageText()}`);
