/**
 * @module What of the side-by-side workload stays in the heap, and who
 * holds it: the objects a scavenge must copy.
 *
 * A scavenge copies what is alive at its moment: what is held for long
 * (the memtable's entries, by design, and any cache or per-run record a
 * module keeps), which it then promotes to the old generation, and what
 * the runs in flight hold at that moment, which dies young if let go
 * before the next one. This bench measures both with heap snapshots of a
 * fresh store's window (N runs of M steps, CONC in flight, as a side-by-
 * side window): one after the untimed runs, one in the middle of the
 * window (at the N*M/2-th step, in the runner), one at its end, each after
 * a full collection.
 *
 * Held: the objects of the end's snapshot that the first did not have,
 * grouped by the first object of the project that retains them (the
 * first retainer path's nearest instance of a class below, and the field
 * it holds them by), in bytes per step. Node's own (module loader,
 * natives) is "(other)". In flight: per constructor, the middle's count
 * and bytes above the line between the first and the end (what grew
 * steadily is taken out).
 *
 * Counts and bytes do not move with the machine's load; the middle's
 * moment does (how many steps are half done), so compare trees
 * alternating. Runs a built checkout's `dist/` (`npm run build`).
 *
 * Run: `N=200 CONC=50 npx tsx bench/step-heap-owners.ts <checkout>`;
 * TOP (25), OUT (a directory for the three snapshots, else a temporary one).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getHeapStatistics, setFlagsFromString, writeHeapSnapshot } from "node:v8";
import { runInNewContext } from "node:vm";
import { loadAverageText } from "./support/load-average.js";
import { chainRunner, loadCheckout, runtimeWorkload, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 200);
const CONC = env("CONC", 50);
const TOP = env("TOP", 25);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);
// A full collection before each snapshot's heap figure, for the bench only.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const out = process.env.OUT ?? mkdtempSync(join(tmpdir(), "taquba-heap-owners-"));

let steps = 0;
let midAt = -1;
let midUsed = 0;
const inner = chainRunner(T);
const runner: import("../runtime/index.js").StepRunner = {
  runStep(s) {
    if (++steps === midAt) {
      gc();
      midUsed = getHeapStatistics().used_heap_size;
      writeHeapSnapshot(join(out, "mid.heapsnapshot"));
    }
    return inner.runStep(s);
  },
};
const enc = new TextEncoder();
const open = async () => {
  const store = new T.MemoryStore();
  return runtimeWorkload(T, await T.Queue.open(store, "bench"), store, runner, enc.encode(`0/${M}`));
};
// Compiled code first, on a store of its own.
let w = await open();
await w.drive(200, CONC);
await w.close();
w = await open();
await w.drive(20, 10);
gc();
const startUsed = getHeapStatistics().used_heap_size;
writeHeapSnapshot(join(out, "start.heapsnapshot"));
midAt = steps + (N * M) / 2;
await w.drive(N, CONC);
gc();
const endUsed = getHeapStatistics().used_heap_size;
writeHeapSnapshot(join(out, "end.heapsnapshot"));
await w.close();

interface Snapshot {
  count: number;
  type(i: number): string;
  name(i: number): string;
  id(i: number): number;
  size(i: number): number;
  /** The first retainer by a strong edge, and that edge's name (a property or context variable; "" for elements). */
  retainer: Int32Array;
  edgeName: string[];
}
function load(file: string, retainers: boolean): Snapshot {
  const s = JSON.parse(readFileSync(file, "utf8"));
  const meta = s.snapshot.meta;
  const nf: number = meta.node_fields.length;
  const ef: number = meta.edge_fields.length;
  const types: string[] = meta.node_types[0];
  const edgeTypes: string[] = meta.edge_types[0];
  const count = s.nodes.length / nf;
  const retainer = new Int32Array(count).fill(-1);
  const edgeName: string[] = new Array(count).fill("");
  if (retainers) {
    let e = 0;
    for (let i = 0; i < count; i++) {
      const end = e + s.nodes[i * nf + 4] * ef;
      for (; e < end; e += ef) {
        const to = s.edges[e + 2] / nf;
        const et = edgeTypes[s.edges[e]]!;
        if (et === "weak" || et === "shortcut" || retainer[to] !== -1) continue;
        retainer[to] = i;
        if (et === "property" || et === "context" || et === "internal") edgeName[to] = String(s.strings[s.edges[e + 1]]);
      }
    }
  }
  return {
    count,
    type: (i) => types[s.nodes[i * nf]]!,
    name: (i) => String(s.strings[s.nodes[i * nf + 1]]),
    id: (i) => s.nodes[i * nf + 2],
    size: (i) => s.nodes[i * nf + 3],
    retainer,
    edgeName,
  };
}

/** Objects of the project that hold long-lived state, named by their class. */
const OWNERS =
  /^(ViewRunKeys|KeptStrings|Memtable|FrozenMemtable|OrderedMap|LayeredState|Engine|WorkflowRuntime|WorkflowView|Queue|QueueCore|LeaseRegistry|CallerIdBound|KeyHeads|WalWriter|ChangedKeys|RunEvents|Notifier|ExpiryHeap|MemoryStore|LocalStore)$/;
const skipped = (t: string) => t === "code" || t === "hidden" || t === "synthetic" || t === "native" || t === "object shape";

const start = load(join(out, "start.heapsnapshot"), false);
const end = load(join(out, "end.heapsnapshot"), true);
const before = new Set<number>();
for (let i = 0; i < start.count; i++) before.add(start.id(i));
const held = new Map<string, [number, number]>();
for (let i = 0; i < end.count; i++) {
  if (before.has(end.id(i)) || skipped(end.type(i))) continue;
  let owner = "(other)";
  let field = "";
  for (let at = i, d = 0; d < 16; d++) {
    const r = end.retainer[at]!;
    if (r < 0) break;
    const name = end.edgeName[at]!;
    if (name !== "" && !/^\d+$/.test(name)) field = name;
    if (end.type(r) === "object" && OWNERS.test(end.name(r))) {
      owner = `${end.name(r)}.${field}`;
      break;
    }
    // A module's own top-level cache: a context variable names it.
    if (end.type(r) === "object" && end.name(r) === "system / Context" && /^kept/.test(name)) {
      owner = `(module) ${name}`;
      break;
    }
    at = r;
  }
  const e = held.get(owner) ?? [0, 0];
  e[0]++;
  e[1] += end.size(i);
  held.set(owner, e);
}

const mid = load(join(out, "mid.heapsnapshot"), false);
const byClass = (s: Snapshot) => {
  const m = new Map<string, [number, number]>();
  for (let i = 0; i < s.count; i++) {
    const t = s.type(i);
    if (skipped(t)) continue;
    const k = t === "object" || t === "closure" ? `${t} ${s.name(i)}` : t;
    const e = m.get(k) ?? [0, 0];
    e[0]++;
    e[1] += s.size(i);
    m.set(k, e);
  }
  return m;
};
const [a, b, c] = [byClass(start), byClass(mid), byClass(end)];
const inFlight = [...b].map(([k, [n, bytes]]) => {
  const [n0, b0] = a.get(k) ?? [0, 0];
  const [n1, b1] = c.get(k) ?? [0, 0];
  return { k, n: n - (n0 + n1) / 2, bytes: bytes - (b0 + b1) / 2 };
});
if (process.env.OUT === undefined) rmSync(out, { recursive: true, force: true });

const total = N * M;
console.log(`${dir}: MemoryStore, N=${N} runs of M=${M} steps, CONC=${CONC}; load ${loadAverageText()}; node ${process.version}`);
console.log(
  `heap used after full collections: start ${(startUsed / 1024).toFixed(0)} KB, middle ${(midUsed / 1024).toFixed(0)} KB, end ${(endUsed / 1024).toFixed(0)} KB: held ${((endUsed - startUsed) / total).toFixed(0)} B a step; in flight at the middle ${((midUsed - (startUsed + endUsed) / 2) / 1024).toFixed(0)} KB`,
);
console.log("\nHeld at the end and not at the start, by holder (B a step, objects):");
for (const [k, [n, bytes]] of [...held].sort((x, y) => y[1][1] - x[1][1]).slice(0, TOP))
  console.log(`${(bytes / total).toFixed(1).padStart(8)} ${String(n).padStart(7)}  ${k}`);
console.log("\nIn flight at the middle, by constructor (KB, objects):");
for (const r of inFlight.sort((x, y) => y.bytes - x.bytes).slice(0, TOP))
  console.log(`${(r.bytes / 1024).toFixed(1).padStart(8)} ${r.n.toFixed(0).padStart(7)}  ${r.k}`);
