/**
 * @module CPU of `WalBuilder.add` alone for one compiled checkout, as low
 * quantiles of short rounds: on a loaded machine a round of 500 adds
 * (a few hundred microseconds) often runs without being preempted, so the
 * 1st and 10th percentiles of 2,500 rounds tell checkouts apart where
 * whole-process CPU does not. Batches are a continuing step's seven ops,
 * keys made afresh (template strings, as the queue makes them) outside the
 * timed part: by default those of bench/commit-encode-ab.ts (`j/` and `c/`
 * keys of one length), with `REAL=1` the peers' workload's shapes
 * (`c/<queue>/<id>`, `j/<id>`, history entry, step pointer, sequence).
 *
 * Run: `npm run build` in each checkout, then alternate
 * `npx tsx bench/wal-add-quantiles.ts <checkout>` (and with `REAL=1`).
 * `TOUCH=1` times with each add a comparison of each of its keys with a
 * string, as the memtable makes after a commit's add: a key built from
 * pieces becomes one string at its first such use, which an encoder may
 * do for it or leave to the memtable.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";

type WalFormat = typeof import("../runtime/engine/wal-format.js");
type BatchOp = import("../runtime/engine/write-batch.js").BatchOp;

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const W = (await import(pathToFileURL(resolve(dir, "dist/runtime/engine/wal-format.js")).href)) as WalFormat;
const REAL = process.env.REAL === "1";
/** TOUCH=1: each key compared with a string after its add, as the memtable does (timed with the add). */
const TOUCH = process.env.TOUCH === "1";
let sink = 0;
const PER = 500;
const ROUNDS = 3000;
const HISTORY = "u/workflow/history/workflow-steps/";
const STEP = "u/workflow/steps/workflow-steps/";
const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(10, "0")}`;
const value = (n: number, fill: number) => new Uint8Array(n).fill(fill);
const [v180, v8, v60, v40] = [value(180, 4), value(8, 5), value(60, 3), value(40, 2)] as const;

function batch(i: number): BatchOp[] {
  const job = id(i);
  const old = id(i - 1);
  const runId = id(i & 63);
  if (REAL) {
    return [
      { kind: "delete", key: `c/workflow-steps/${old}` },
      { kind: "delete", key: `j/${old}` },
      { kind: "put", key: `${HISTORY}${runId}/${String(i).padStart(10, "0")}`, value: v60 },
      { kind: "put", key: STEP + runId, value: v40 },
      { kind: "put", key: `j/${job}`, value: v180 },
      { kind: "put", key: `c/workflow-steps/${job}`, value: v8 },
      { kind: "put", key: "n/workflow-steps", value: v8 },
    ];
  }
  return [
    { kind: "put", key: `j/${job}`, value: v180 },
    { kind: "put", key: `c/${job}`, value: v8 },
    { kind: "delete", key: `c/${old}` },
    { kind: "delete", key: `j/${old}` },
    { kind: "put", key: `${HISTORY}${runId}/${i}`, value: v60 },
    { kind: "put", key: STEP + runId, value: v40 },
    { kind: "put", key: "n/workflow-steps", value: v8 },
  ];
}

const keys = W.EncodedKeys === undefined ? undefined : new W.EncodedKeys();
let builder = new W.WalBuilder(1 << 20);
const times: number[] = [];
const rooms = new Array<number>(PER);
let next = 1e7;
for (let r = 0; r < ROUNDS; r++) {
  const batches: BatchOp[][] = [];
  for (let i = 0; i < PER; i++) batches.push(batch(next + i));
  next += PER;
  for (let i = 0; i < PER; i++) rooms[i] = W.checkBatchSize(batches[i]!);
  if (builder.byteLength > 700_000) builder = new W.WalBuilder(1 << 20, builder.writer);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < PER; i++) {
    const ops = batches[i]!;
    builder.add(ops, rooms[i], keys);
    // The engine compares each key with the memtable's after the add, which makes a key built from pieces one
    // string (in place, once): an encoder that leaves that to the memtable pays for it there.
    if (TOUCH) for (let o = 0; o < ops.length; o++) sink += ops[o]!.key < "m" ? 1 : 0;
  }
  // The first rounds warm the JIT.
  if (r >= 500) times.push(Number(process.hrtime.bigint() - t0) / PER);
}
times.sort((a, b) => a - b);
const q = (p: number) => times[Math.floor(p * times.length)]!.toFixed(0);
console.log(
  `${dir} ${REAL ? "peers' keys" : "commit-encode-ab keys"}${TOUCH ? ", keys compared after" : ""}: ns per add p1 ${q(0.01)} p10 ${q(0.1)} p50 ${q(0.5)} (load ${loadAverageText()})`,
);
// Read, so the comparisons are not dropped as unused.
if (sink < 0) console.log(sink);
