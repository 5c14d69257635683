/**
 * @module The engine's in-memory state, alone: the B-tree of one string per
 * key (before) against the layered state of a memtable over compact key
 * runs (layered-state.ts) under several merge settings, on the keys a
 * backlog of pending jobs holds.
 *
 * Builds N jobs (argv[2], default 1000000) as the queue stores them (the
 * record `j/<id>` paged to a run id, the pending index
 * `p/jobs/<priority>/<id>` holding its key tail), with monotonic ULIDs, in
 * each structure, and reports per structure: heap and array buffers held
 * (after a full GC, with --expose-gc), the time and the process CPU time to
 * fill, the longest single write (a freeze, a merge or a merge slice), the
 * bytes merges wrote per key and the runs left, and the cost of a get that
 * hits (random job records), a get that misses, a claim-like scan (the first
 * pending entry, then delete it and its record: a drain of DRAIN jobs,
 * default 100000) and a full scan.
 *
 * The layered settings: merge ratio 2 with each merge run whole inside the
 * write that starts it (the behaviour before incremental merges), then
 * sliced merges at ratios 2, 4 (the default) and 8. The loop never yields a
 * turn, so merges advance by write slices only (idle slices are off here).
 * CONFIGS (comma-separated names) picks some.
 *
 *   npx tsx --expose-gc bench/engine-state.ts 1000000
 */
import { loadavg } from "node:os";
import { monotonicFactory } from "ulid";
import { LayeredState, type LayeredStateOptions } from "../runtime/engine/layered-state.js";
import type { StoredValue } from "../runtime/engine/paged-value.js";
import { BTree } from "../runtime/store/btree.js";
import { compareKeys } from "../runtime/store/keys.js";
import { seededRandom } from "../runtime/store/prng.js";

const N = Number(process.argv[2] ?? 1_000_000);
const DRAIN = Math.min(N, Number(process.env.DRAIN ?? 100_000));
const GETS = 200_000;
const gc = (globalThis as { gc?: () => void }).gc;
const MB = 1024 * 1024;

interface State {
  /** Merge figures of a layered state. */
  stats?(): string;
  /** Bytes the runs hold (their buffers, which `arrayBuffers` does not count once they are resizable). */
  runBytes?(): number;
  get(key: string): StoredValue | undefined;
  set(key: string, v: StoredValue): unknown;
  delete(key: string): unknown;
  scan(opts: { prefix?: string; limit?: number }): Iterable<[string, StoredValue]>;
}

function btreeState(): State {
  const tree = new BTree<string, StoredValue>(undefined, compareKeys);
  return {
    get: (k) => tree.get(k),
    set: (k, v) => tree.set(k, v),
    delete: (k) => tree.delete(k),
    *scan(opts) {
      const prefix = opts.prefix ?? "";
      let n = 0;
      for (const e of tree.entries(prefix)) {
        if (!e[0].startsWith(prefix) || n++ >= (opts.limit ?? Infinity)) return;
        yield e;
      }
    },
  };
}

function memory(): { heap: number; buffers: number } {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers };
}

/**
 * Job i's id: what a monotonic ULID factory returns on its i-th call within
 * one millisecond (the first id plus i in the low 40 bits), computed instead
 * of stored, so that 10M ids do not hold half a gigabyte of strings.
 */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const firstId = monotonicFactory(seededRandom(1))(1_700_000_000_000);
const idHead = firstId.slice(0, 18);
const idLow = [...firstId.slice(18)].reduce((n, c) => n * 32 + CROCKFORD.indexOf(c), 0);
function idOf(i: number): string {
  let n = idLow + i;
  let tail = "";
  for (let k = 0; k < 8; k++) {
    tail = CROCKFORD[n % 32]! + tail;
    n = Math.floor(n / 32);
  }
  if (n > 0) throw new Error("more jobs than the id's low 40 bits hold");
  return idHead + tail;
}
const rows: string[] = [];

function measure(name: string, make: () => State): void {
  const before = memory();
  let t = performance.now();
  const cpu0 = process.cpuUsage();
  const state = make();
  let longest = 0;
  let slow = 0;
  const rss0 = process.memoryUsage.rss();
  let rssPeak = rss0;
  for (let i = 0; i < N; i++) {
    const id = idOf(i);
    if ((i & 4095) === 0) rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    const t0 = performance.now();
    state.set(`j/${id}`, 3);
    state.set(`p/jobs/0000000005/${id}`, -id.length);
    const took = performance.now() - t0;
    longest = Math.max(longest, took);
    if (took >= 20) slow++;
  }
  const fillS = (performance.now() - t) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const fillCpuS = (cpu.user + cpu.system) / 1e6;
  const merges = state.stats?.() ?? "– | – | –";
  rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  const held = memory();
  const runBytes = state.runBytes?.() ?? 0;
  const random = seededRandom(2);
  t = performance.now();
  let hits = 0;
  for (let i = 0; i < GETS; i++) if (state.get(`j/${idOf(Math.floor(random() * N))}`) !== undefined) hits++;
  const getNs = ((performance.now() - t) * 1e6) / GETS;
  t = performance.now();
  for (let i = 0; i < GETS; i++) if (state.get(`j/${idOf(Math.floor(random() * N))}x`) !== undefined) hits++;
  const missNs = ((performance.now() - t) * 1e6) / GETS;
  t = performance.now();
  let scanned = 0;
  for (const _ of state.scan({})) scanned++;
  const fullNs = ((performance.now() - t) * 1e6) / scanned;
  t = performance.now();
  for (let i = 0; i < DRAIN; i++) {
    const first = state.scan({ prefix: "p/jobs/", limit: 1 })[Symbol.iterator]().next().value as [string, StoredValue];
    state.delete(first[0]);
    state.delete(`j/${first[0].slice(first[0].lastIndexOf("/") + 1)}`);
  }
  const claimUs = ((performance.now() - t) * 1e3) / DRAIN;
  if (hits !== GETS || scanned !== 2 * N) throw new Error(`wrong answers: ${hits} hits, ${scanned} scanned`);
  const perJob = (b: number) => (b / N).toFixed(0);
  rows.push(
    `| ${name} | ${fillS.toFixed(2)} s | ${fillCpuS.toFixed(2)} s | ${longest.toFixed(0)} ms, ${slow} ≥ 20 ms | ${merges} | ${((held.heap - before.heap) / MB).toFixed(0)} MB (${perJob(held.heap - before.heap)} B/job) | ${((held.buffers - before.buffers) / MB).toFixed(0)} MB (${perJob(held.buffers - before.buffers)} B/job) | ${runBytes === 0 ? "–" : `${(runBytes / MB).toFixed(0)} MB (${perJob(runBytes)} B/job)`} | ${((rssPeak - rss0) / MB).toFixed(0)} MB | ${getNs.toFixed(0)} ns | ${missNs.toFixed(0)} ns | ${fullNs.toFixed(0)} ns | ${claimUs.toFixed(2)} µs |`,
  );
}

function layered(opts: LayeredStateOptions): () => State {
  return () => {
    const s = new LayeredState({ idleSlice: 0, ...opts });
    return {
      get: (k) => s.get(k),
      set: (k, v) => s.set(k, v),
      delete: (k) => s.delete(k),
      scan: (o) => s.scan(o),
      runBytes: () => s.layout.runs.reduce((n, r) => n + r.bytes, 0),
      stats() {
        const c = s.counters;
        const keys = 2 * N;
        return `${(c.mergedBytes / keys).toFixed(1)} B (${(c.mergedEntries / keys).toFixed(2)} entries) | ${c.merges}/${c.rewrites}/${c.catchUps} | ${s.layout.runs.length}`;
      },
    };
  };
}

const CONFIGS: [string, () => State][] = [
  ["B-tree (before)", btreeState],
  ["layered, ratio 2, whole merges (before)", layered({ mergeRatio: 2, writeSlice: Infinity })],
  ["layered, ratio 2, sliced", layered({ mergeRatio: 2 })],
  ["layered, ratio 4, sliced, merges of any size (before)", layered({ mergeRatio: 4, maxMergeEntries: Infinity })],
  ["layered, ratio 4, sliced (default)", layered({ mergeRatio: 4 })],
  ["layered, ratio 8, sliced", layered({ mergeRatio: 8 })],
];
const pick = process.env.CONFIGS?.split(",").map((c) => c.trim());

const load0 = loadavg();
for (const [name, make] of CONFIGS) if (pick === undefined || pick.some((p) => name.includes(p))) measure(name, make);
console.log(
  `engine-state: ${N.toLocaleString("en-US")} pending jobs (2 keys each), ${GETS.toLocaleString("en-US")} gets, drain of ${DRAIN.toLocaleString("en-US")}; GC before memory figures: ${gc ? "yes" : "no (run with --expose-gc)"}`,
);
console.log(
  `load average at start ${load0.map((l) => l.toFixed(2)).join(" ")}, at end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(
  "| state | fill (wall, loaded) | fill CPU | longest write pair, pairs ≥ 20 ms (wall, loaded) | merges wrote per key | merges/rewrites/catch-ups | runs after fill | heap held | array buffers held | runs' bytes | peak RSS growth while filling | get (hit) | get (miss) | full scan, per entry | claim (scan first + 2 deletes) |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
