/**
 * @module What a string comparison costs against the length of the prefix
 * the two strings share, for counting machine instructions with callgrind:
 * the memtable's searches compare keys of one family (a run's history keys
 * share about 50 leading characters) at every level. Run it at N and 2N and
 * subtract: what is left is N comparisons (with the loop around them).
 *
 * MODE=lt: the built-in `<`, as the searches compare; MODE=from: a loop of
 * `charCodeAt` from the shared prefix's end, what a search that skipped a
 * known common prefix would run instead; MODE=starts: `startsWith` of the
 * prefix, what checking a key against a node's common prefix would cost.
 *
 *   npx esbuild bench/string-compare-prefix.ts --bundle --platform=node --format=esm --outfile=bench/.out/compare-prefix.mjs
 *   MODE=lt L=50 N=2000000 valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --no-concurrent-recompilation bench/.out/compare-prefix.mjs
 */
const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const L = env("L", 50);
const N = env("N", 2_000_000);
const MODE = process.env.MODE ?? "lt";
if (!Number.isInteger(L) || L < 0 || L > 150 || !Number.isInteger(N) || N <= 0) throw new Error(`L must be 0-150 and N a positive integer, got ${L}, ${N}`);

/** A flat copy of `s`: the engine's keys are flat. */
const flat = (s: string) => Buffer.from(s, "latin1").toString("latin1");
const prefix = "u/workflow/history/workflow-steps/01M8TVYTZPV71T97".repeat(3).slice(0, L);
const M = 4096;
const left: string[] = [];
const right: string[] = [];
for (let i = 0; i < M; i++) {
  left.push(flat(prefix + (1_000_000 + i * 7).toString(36)));
  right.push(flat(prefix + (1_000_000 + ((i * 7919) % M) * 7).toString(36)));
}

function less(a: string, b: string): boolean {
  return a < b;
}

function lessFrom(a: string, b: string, from: number): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = from; i < n; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d < 0;
  }
  return a.length < b.length;
}

let sink = 0;
if (MODE === "lt") for (let i = 0; i < N; i++) sink += less(left[i & (M - 1)]!, right[(i * 3) & (M - 1)]!) ? 1 : 0;
else if (MODE === "from") for (let i = 0; i < N; i++) sink += lessFrom(left[i & (M - 1)]!, right[(i * 3) & (M - 1)]!, L) ? 1 : 0;
else if (MODE === "starts") for (let i = 0; i < N; i++) sink += left[i & (M - 1)]!.startsWith(prefix) ? 1 : 0;
else throw new Error(`MODE must be lt, from or starts, got ${MODE}`);
console.log(`string-compare-prefix: MODE=${MODE} L=${L} N=${N} (sink ${sink})`);
