/**
 * @module Two parts of a continuing step's settlement, in one or more
 * compiled checkouts alternating round by round in one process (so each
 * runs under the same load), over 2,000 steps' values: the step pointer's
 * encoding (`pointer`: `encodeNextStepPointer` where the checkout has it,
 * else `encodeStepPointer`, as the settlement calls it) and the history
 * entry's put (`history`: the key built by `stepHistoryKey`, staged by
 * `stageOwnedPutOnce`, committed into a transaction and its engine key
 * compared once, as the memtable's insert compares it, which flattens a
 * concatenated key). Prints CPU ns per item of each round of REPS passes,
 * and the median of the rounds after the first (the JIT warms up in it).
 *
 * Callgrind's totals did not work here: one process's start-up moved by
 * more instructions than 12,000 items cost (a run of REPS=8 counted fewer
 * than one of REPS=2).
 *
 * Run: `npm run build` in each checkout, then
 * `ROUNDS=15 REPS=50 npx tsx bench/step-settle-parts.ts <checkout A> <checkout B>` (`WHICH=pointer|history`, default both).
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const REPS = Number(process.env.REPS ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 15);
const WHICH = process.env.WHICH ?? "both";
const ITEMS = 2000;

type Mod = Record<string, (...a: unknown[]) => unknown>;
type Txn = { batch: { ops: { key: string }[] } };

const runIds = Array.from({ length: ITEMS }, (_, i) => `01JQ${String(i).padStart(22, "0")}`);
const jobIds = Array.from({ length: ITEMS }, (_, i) => `01JR${String(i * 7).padStart(22, "0")}`);
const value = new Uint8Array(120);
const source = { get: () => undefined, *scan() {} };
let sink = 0;

/** The two parts as checkout `dir` runs them. */
async function partsOf(dir: string): Promise<{ pointer: () => void; history: () => void }> {
  const load = async (path: string): Promise<Mod> => (await import(pathToFileURL(resolve(dir, "dist/runtime", path)).href)) as Mod;
  const records = await load("workflow/records/records.js");
  const { stepHistoryKey } = (await load("workflow/runs/history-records.js")) as unknown as {
    stepHistoryKey: (q: string, runId: string, step: number) => string;
  };
  const { stageOwnedPutOnce, commitKvOps, SettlementEffects } = (await load("queue/effects.js")) as unknown as {
    stageOwnedPutOnce: (e: object, key: string, v: Uint8Array) => void;
    commitKvOps: (e: object, txn: object) => void;
    SettlementEffects: new () => object;
  };
  const { Txn } = (await load("queue/txn.js")) as unknown as { Txn: new (src: object) => Txn };
  const encodePointer = records.encodeNextStepPointer ?? records.encodeStepPointer!;
  return {
    pointer() {
      for (let i = 0; i < ITEMS; i++) {
        const p: { step: number; jobId: string; name?: string } = { step: (i % 10) + 1, jobId: jobIds[i]! };
        if (i % 4 === 0) p.name = "charge";
        sink += (encodePointer(p) as Uint8Array).byteLength;
      }
    },
    history() {
      for (let i = 0; i < ITEMS; i++) {
        const effects = new SettlementEffects();
        stageOwnedPutOnce(effects, stepHistoryKey("workflow-steps", runIds[i]!, i % 10), value);
        const txn = new Txn(source);
        commitKvOps(effects, txn);
        // The memtable's first comparison of the key, which flattens it when it is a concatenation.
        if (txn.batch.ops[0]!.key < "u/workflow/history/workflow-steps/01JQ") sink++;
      }
    },
  };
}

const which = WHICH === "both" ? (["pointer", "history"] as const) : [WHICH as "pointer" | "history"];
if (!which.every((w) => w === "pointer" || w === "history")) throw new Error("WHICH is pointer, history or both");
const checkouts = await Promise.all(dirs.map(partsOf));
console.log(`ROUNDS=${ROUNDS} REPS=${REPS} ITEMS=${ITEMS} load ${loadAverageText()}`);
for (const part of which) {
  const rounds = dirs.map(() => [] as number[]);
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < dirs.length; i++) {
      const run = checkouts[i]![part];
      const t0 = process.cpuUsage();
      for (let k = 0; k < REPS; k++) run();
      const t = process.cpuUsage(t0);
      rounds[i]!.push(((t.user + t.system) * 1000) / (REPS * ITEMS));
    }
  }
  for (let i = 0; i < dirs.length; i++) {
    const ns = rounds[i]!;
    console.log(`${dirs[i]} ${part}: ${ns.map((x) => x.toFixed(0)).join(", ")} ns per item (median after the first ${median(ns.slice(1)).toFixed(0)})`);
  }
}
console.log(`load at end ${loadAverageText()}${sink > 0 ? "" : " !"}`);
