/**
 * @module CPU of a commit's encoding alone, for two or more compiled
 * checkouts: the WAL batch (`WalBuilder.add`, with `checkBatchSize`) and the
 * changed-keys record (`applyOps` over a state map that does nothing), for
 * the ops of a continuing step's settlement (bench/commit-path-cost.ts):
 * seven ops, keys of 16-70 characters made afresh for each commit as the
 * queue makes them (template strings), values of 8-180 B. No memtable, no
 * checkpoint, no store: what the commit path's own encoding costs.
 *
 * Each checkout runs in a process of its own (two checkouts loaded in one
 * process run at different speeds: the second is slower by up to 15 %),
 * alternating A B B A ..., so both orders are measured under the same load.
 * Prints ns CPU per commit (`process.cpuUsage`) per process and the median
 * per checkout. A checkout without the encoded-keys hand-off (before it)
 * encodes the keys again in the map, as it did. `BARE=1` times making the
 * ops alone, which every figure includes.
 *
 * Run: `npm run build` in each checkout, then
 * `PAIRS=4 N=300000 npx tsx bench/commit-encode-ab.ts <checkout A> <checkout B>`.
 */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";

type WalFormat = typeof import("../runtime/engine/wal-format.js");
type ChangedKeysModule = typeof import("../runtime/engine/changed-keys.js");
type ApplyOpsModule = typeof import("../runtime/engine/apply-ops.js");
type BatchOp = import("../runtime/engine/write-batch.js").BatchOp;
type StateMap = import("../runtime/engine/paged-value.js").StateMap;

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300_000);
const PAIRS = env("PAIRS", 4);
/** BARE=1: only make the ops (the part of each figure that is the bench's own). */
const BARE = env("BARE", 0) === 1;

async function child(dir: string): Promise<void> {
  const load = <M>(path: string) => import(pathToFileURL(resolve(dir, path)).href) as Promise<M>;
  const W = await load<WalFormat>("dist/runtime/engine/wal-format.js");
  const CK = await load<ChangedKeysModule>("dist/runtime/engine/changed-keys.js");
  const AO = await load<ApplyOpsModule>("dist/runtime/engine/apply-ops.js");
  const HISTORY = "u/workflow/history/workflow-steps/";
  const STEP = "u/workflow/steps/workflow-steps/";
  const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(10, "0")}`;
  const value = (n: number, fill: number) => new Uint8Array(n).fill(fill);
  const [v180, v8, v60, v40] = [value(180, 4), value(8, 5), value(60, 3), value(40, 2)];
  // Only the encoding is timed: the state map takes nothing.
  const tree = { set() {}, delete() {} } as unknown as StateMap;
  const keys = W.EncodedKeys === undefined ? undefined : new W.EncodedKeys();
  const run = (n: number, first: number): number => {
    let builder = new W.WalBuilder(1 << 20);
    let delta = new CK.ChangedKeys(7);
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const job = id(first + i);
      const old = id(first + i - 1);
      const runId = id(i & 63);
      const ops: BatchOp[] = [
        { kind: "put", key: `j/${job}`, value: v180 },
        { kind: "put", key: `c/${job}`, value: v8 },
        { kind: "delete", key: `c/${old}` },
        { kind: "delete", key: `j/${old}` },
        { kind: "put", key: `${HISTORY}${runId}/${i}`, value: v60 },
        { kind: "put", key: STEP + runId, value: v40 },
        { kind: "put", key: "n/workflow-steps", value: v8 },
      ];
      if (BARE) {
        sink += ops.length;
        continue;
      }
      builder.add(ops, W.checkBatchSize(ops), keys);
      AO.applyOps(tree, ops, delta, undefined, undefined, keys);
      if (builder.byteLength > 900_000) {
        sink += builder.byteLength;
        builder = new W.WalBuilder(1 << 20, builder.writer);
      }
      // About what a checkpoint interval's map holds.
      if (delta.size > 60_000) delta = new CK.ChangedKeys(7);
    }
    return sink;
  };
  run(50_000, 1e7);
  const t0 = process.cpuUsage();
  run(N, 2e7);
  const u = process.cpuUsage(t0);
  console.log((((u.user + u.system) * 1000) / N).toFixed(0));
}

const args = process.argv.slice(2);
if (args[0] === "--child") await child(args[1]!);
else {
  if (args.length < 2) throw new Error("name two or more built checkouts");
  console.log(`N=${N} PAIRS=${PAIRS} load ${loadAverageText()}`);
  const self = fileURLToPath(import.meta.url);
  const results = new Map<string, number[]>(args.map((d) => [d, []]));
  for (let p = 0; p < PAIRS; p++) {
    const order = p % 2 === 0 ? args : [...args].reverse();
    for (const dir of order) {
      const out = execFileSync(process.execPath, [...process.execArgv, self, "--child", dir], { env: process.env, encoding: "utf8" });
      const ns = Number(out.trim());
      results.get(dir)!.push(ns);
      console.log(`pair ${p + 1} ${dir}: ${ns} ns per commit (load ${loadAverageText()})`);
    }
  }
  for (const [dir, all] of results) {
    const sorted = [...all].sort((a, b) => a - b);
    console.log(`${dir}: median ${sorted[sorted.length >> 1]} ns per commit (${all.join(", ")})`);
  }
}
