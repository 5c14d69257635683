/**
 * @module A fixed sequence of memtable operations for counting machine
 * instructions with callgrind, where wall time on a shared machine is too
 * noisy to compare two checkouts' maps. Run it at N and 2N operations and
 * subtract: start-up and compilation cancel, what is left is the cost of N
 * operations in that checkout's compiled `Memtable`.
 *
 * WORKLOAD=mixed: K keys of three engine-shaped families (job records,
 * queue entries, workflow history: 22-50 ASCII characters sharing long
 * prefixes, made flat as the engine's are) inserted in random order, read,
 * overwritten, then deleted; N counts those rounds' operations.
 * WORKLOAD=inserts: only the random-order inserts of those rounds (N counts
 * inserts); WORKLOAD=insdel: each round's inserts then its deletes in random
 * order (N counts both; a delete costs this per operation times two, less
 * the inserts' figure); WORKLOAD=gets: N reads of keys drawn at random from a
 * table of K keys made once (a seventh of them absent).
 * WORKLOAD=queue: a queue's pattern on a table already holding K keys:
 * each operation appends a pending entry past the others and takes the
 * oldest one, plus an overwrite of a job record (KEYS: how many
 * operations' keys to make, the same in both runs).
 *
 *   npx esbuild bench/memtable-map-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/map-instr.mjs
 *   WORKLOAD=queue N=20000 KEYS=40000 valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded bench/.out/map-instr.mjs <checkout>
 *
 * (`npm run build` in the checkout first; callgrind prints the total as "Collected".)
 */
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { seededRandom } from "../runtime/store/prng.js";

type MemtableModule = typeof import("../runtime/engine/memtable.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const { Memtable } = (await import(pathToFileURL(resolve(dir, "dist/runtime/engine/memtable.js")).href)) as MemtableModule;
const workload = process.env.WORKLOAD ?? "mixed";
const N = Number(process.env.N ?? 40_000);
const K = Number(process.env.K ?? 20_000);
if (!Number.isInteger(N) || N <= 0 || !Number.isInteger(K) || K <= 0) throw new Error(`N and K must be positive integers, got ${N}, ${K}`);

/** A flat copy of `s`: template literals make concatenations, the engine's keys are flat. */
const flat = (s: string) => Buffer.from(s, "latin1").toString("latin1");
const rand = seededRandom(7);
const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(6, "0")}`;
const families = [(n: number) => `j/${id(n)}`, (n: number) => `q/default/0/${id(n)}`, (n: number) => `u/workflow/history/workflow-steps/${id(n)}/0003`];
const value = new Uint8Array(64);
let sink = 0;

const shuffle = (a: string[]) => {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
};
if (workload === "inserts" || workload === "insdel") {
  const keys = Array.from({ length: K }, (_, i) => flat(families[i % 3]!(i * 7919)));
  const shuffled = shuffle([...keys]);
  const drops = shuffle([...keys]);
  const perRound = workload === "inserts" ? K : 2 * K;
  for (let done = 0; done < N; done += perRound) {
    const t = new Memtable<Uint8Array>();
    for (const k of shuffled) t.set(k, value);
    if (workload === "insdel") for (const k of drops) if (t.delete(k)) sink++;
    sink += t.size;
  }
} else if (workload === "gets") {
  const keys = Array.from({ length: K }, (_, i) => flat(families[i % 3]!(i * 7919)));
  const t = new Memtable<Uint8Array>();
  for (const k of shuffle(keys.filter((_, i) => i % 7 !== 0))) t.set(k, value);
  // Reads drawn before any is timed, for KEYS reads whatever N is.
  const reads = Array.from({ length: Math.max(N, Number(process.env.KEYS ?? N)) }, () => keys[Math.floor(rand() * K)]!);
  for (let i = 0; i < N; i++) if (t.get(reads[i]!) !== undefined) sink++;
} else if (workload === "mixed") {
  const keys = Array.from({ length: K }, (_, i) => flat(families[i % 3]!(i * 7919)));
  const shuffled = shuffle([...keys]);
  // One round: K inserts, K gets, K overwrites, K deletes.
  for (let done = 0; done < N; done += 4 * K) {
    const t = new Memtable<Uint8Array>();
    for (const k of shuffled) t.set(k, value);
    for (const k of keys) if (t.get(k) !== undefined) sink++;
    for (const k of shuffled) t.set(k, value);
    for (const k of keys) t.delete(k);
  }
} else if (workload === "queue") {
  const pending = (n: number) => flat(`q/default/pending/0/${id(n)}`);
  const job = (n: number) => flat(`j/${id(n)}`);
  const t = new Memtable<Uint8Array>();
  for (let i = 0; i < K; i++) {
    t.set(pending(i), value);
    t.set(job(i), value);
  }
  // Keys for KEYS operations made whatever N is, so runs at N and 2N make the same strings.
  const ops = Array.from({ length: Math.max(N, Number(process.env.KEYS ?? N)) }, (_, i) => [pending(K + i), pending(i), job(i)] as const);
  for (let i = 0; i < N; i++) {
    const [add, take, record] = ops[i]!;
    t.set(add, value);
    t.delete(take);
    t.set(record, value);
  }
  sink += t.size;
} else throw new Error(`WORKLOAD must be mixed, inserts, insdel, gets or queue, got ${workload}`);
console.log(`memtable-map-instructions: ${workload} N=${N} K=${K} (sink ${sink})`);
