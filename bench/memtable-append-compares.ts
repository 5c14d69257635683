/**
 * @module Key comparisons per memtable insert, counted (a number the load of
 * a shared machine cannot move), for two or more checkouts' ordered maps:
 * the map is given an order that counts its calls, which searches the same
 * nodes as the built-in comparison the memtable uses for ASCII keys.
 *
 * Patterns, each on a fresh map of K keys first:
 * - fill: a fill's batches as the WAL holds them (and a reopen replays
 *   them): a job record `j/<id>` then its pending entry `p/jobs/<pri>/<id>`,
 *   ids ascending, so the pending family appends past every key;
 * - queue: a pending entry appended past the others, the oldest taken, a
 *   job record overwritten;
 * - random: inserts of keys of three families in a seeded random order (no
 *   appends: what the append check costs where it never applies).
 *
 * Run: `N=20000 K=20000 npx tsx bench/memtable-append-compares.ts <checkout A> <checkout B>`
 * (the checkouts' sources are loaded; no build needed).
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { seededRandom } from "../runtime/store/prng.js";

type MapModule = typeof import("../runtime/engine/ordered-map.js");

const N = Number(process.env.N ?? 20_000);
const K = Number(process.env.K ?? 20_000);
if (!Number.isInteger(N) || N <= 0 || !Number.isInteger(K) || K < 0) throw new Error(`N must be a positive integer and K a whole number, got ${N}, ${K}`);
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more checkouts");

const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(8, "0")}`;
const record = (n: number) => `j/${id(n)}`;
const pending = (n: number) => `p/jobs/0000001000/${id(n)}`;

let compares = 0;
const counting = (a: string, b: string): number => {
  compares++;
  return a === b ? 0 : a < b ? -1 : 1;
};

function run(M: MapModule, pattern: string): number {
  const map = new M.OrderedMap<number>(counting);
  for (let i = 0; i < K; i++) {
    map.set(record(i), i);
    map.set(pending(i), i);
  }
  compares = 0;
  let sets = 0;
  if (pattern === "fill") {
    for (let i = K; i < K + N; i++) {
      map.set(record(i), i);
      map.set(pending(i), i);
      sets += 2;
    }
  } else if (pattern === "queue") {
    for (let i = 0; i < N; i++) {
      map.set(pending(K + i), i);
      map.delete(pending(i));
      map.set(record(i), -i);
      sets += 2;
    }
  } else {
    const rand = seededRandom(11);
    const families = [(n: number) => `u/workflow/history/workflow-steps/${id(n)}/0003`, (n: number) => `c/s/${id(n)}`, record];
    for (let i = 0; i < N; i++) {
      const n = Math.floor(rand() * 1e9);
      map.set(families[n % 3]!(n), i);
      sets++;
    }
  }
  return compares / sets;
}

for (const dir of dirs) {
  const M = (await import(pathToFileURL(resolve(dir, "runtime/engine/ordered-map.ts")).href)) as MapModule;
  const line = ["fill", "queue", "random"].map((p) => `${p} ${run(M, p).toFixed(2)}`).join(", ");
  console.log(`${dir}: comparisons per insert (deletes of the queue pattern counted with its sets) at K=${K}, N=${N}: ${line}`);
}
