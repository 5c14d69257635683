/**
 * @module What a step's open would pay to learn a run's current step from
 * the run's last history entry instead of its step pointer: one look-up
 * per `MODE`, over an engine (MemoryStore, checkpoints off, the runtime's
 * key heads) holding the side-by-side workload's keys: ENDED finished runs
 * (ten history entries, outcome, run-index and run-ended entries each) and
 * CONC runs in flight (run record, step pointer, job record, claimed entry
 * and 1-10 history entries each). Look-ups go round the runs in flight.
 *
 * MODE:
 * - `token`: the pointer's value token by its headed key
 *   (`Engine.valueTokenHeaded`), what a chained step's open pays now when
 *   the settlement that claimed it carried the pointer;
 * - `get`: the pointer's value by its headed key (`Engine.getHeaded`), the
 *   open's read when nothing was carried;
 * - `seek`: the first entry of a reverse scan of the run's history prefix
 *   (`Engine.scan({ prefix, reverse: true, limit: 1 })`), the read a stored
 *   layout without chained steps' pointer puts would make instead;
 * - `none`: the loop alone, to subtract.
 *
 * For callgrind, the look-ups after WARM uninstrumented ones (bundled, so
 * tsx's compiles are not counted):
 * `npx esbuild bench/history-seek-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/history-seek.mjs`,
 * `npm run build` in the checkout, then
 * `MODE=<token|get|seek|none> N=20000 npx tsx bench/callgrind-gated.ts <out.cg> node --single-threaded --no-concurrent-recompilation bench/.out/history-seek.mjs <checkout>`;
 * the per-unit figure less `none`'s is the look-up's. Without valgrind it
 * prints ns per look-up (a rough figure).
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { gateClose, gateOpen } from "./support/callgrind-gate.js";
import { loadAverageText } from "./support/load-average.js";

type EngineModule = typeof import("../runtime/engine/engine.js");
type FamilyModule = typeof import("../runtime/engine/key-family.js");
type StoreModule = typeof import("../runtime/store/memory-store.js");
type BatchModule = typeof import("../runtime/engine/write-batch.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const load = async <M>(path: string): Promise<M> => (await import(pathToFileURL(resolve(dir, "dist/runtime", path)).href)) as M;
const { Engine } = await load<EngineModule>("engine/engine.js");
const { KeyFamily } = await load<FamilyModule>("engine/key-family.js");
const { MemoryStore } = await load<StoreModule>("store/memory-store.js");
const { WriteBatch } = await load<BatchModule>("engine/write-batch.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 20_000);
const WARM = env("WARM", 50_000);
const ENDED = env("ENDED", 2_000);
const CONC = env("CONC", 50);
const MODE = process.env.MODE ?? "seek";
if (!["token", "get", "seek", "none"].includes(MODE)) throw new Error(`MODE is token, get, seek or none, got ${MODE}`);

const Q = "workflow-steps";
const RUNS = `u/workflow/runs/${Q}/`;
const STEPS = `u/workflow/steps/${Q}/`;
const HISTORY = `u/workflow/history/${Q}/`;
// The runtime's key heads (its busiest prefixes, declared on the queue under the caller's `u/`).
const engine = await Engine.open(new MemoryStore(), {
  checkpointWalBytes: 0,
  checkpointWalObjects: 0,
  keyHeads: ["u/workflow/runs/", "u/workflow/steps/", "u/workflow/history/"],
});
const pointers = new KeyFamily(STEPS);

// Ids of the ULID's length and alphabet, ascending as drawn ids are.
let drawn = 0;
const id = () => `01JAB${(drawn++).toString(32).toUpperCase().padStart(21, "0")}`;
const step = (n: number) => String(n).padStart(10, "0");
const bytes = (n: number) => new Uint8Array(n).fill(7);

const batch = new WriteBatch();
for (let i = 0; i < ENDED; i++) {
  const run = id();
  for (let s = 0; s < 10; s++) batch.put(`${HISTORY}${run}/${step(s)}`, bytes(60));
  batch.put(`u/workflow/outcomes/${Q}/${run}`, bytes(40));
  batch.put(`u/workflow/run-index/${Q}/${run}`, bytes(20));
  batch.put(`u/workflow/run-ended/${Q}/succeeded/${run}`, bytes(1));
}
const live: { prefix: string; pointer: ReturnType<typeof pointers.key> }[] = [];
for (let i = 0; i < CONC; i++) {
  const run = id();
  const job = id();
  const steps = 1 + (i % 10);
  for (let s = 0; s < steps; s++) batch.put(`${HISTORY}${run}/${step(s)}`, bytes(60));
  batch.put(`${RUNS}${run}`, bytes(80));
  batch.put(`${STEPS}${run}`, bytes(36));
  batch.put(`j/${job}`, bytes(150));
  batch.put(`c/${Q}/${job}`, bytes(0));
  live.push({ prefix: `${HISTORY}${run}/`, pointer: pointers.key(run) });
}
await engine.commit(batch);

let seen = 0;
function lookUps(n: number): void {
  for (let i = 0; i < n; i++) {
    const r = live[i % CONC]!;
    if (MODE === "token") {
      if (engine.valueTokenHeaded(r.pointer) !== undefined) seen++;
    } else if (MODE === "get") {
      seen += engine.getHeaded(r.pointer)?.length ?? 0;
    } else if (MODE === "seek") {
      for (const [k] of engine.scan({ prefix: r.prefix, reverse: true, limit: 1 })) seen += k.length;
    } else seen++;
  }
}

lookUps(WARM);
await gateOpen();
const t0 = process.hrtime.bigint();
lookUps(N);
const ns = Number(process.hrtime.bigint() - t0);
await gateClose(N);
console.log(`${join(dir)}: MODE=${MODE} N=${N} WARM=${WARM} ENDED=${ENDED} CONC=${CONC} load ${loadAverageText()}`);
console.log(`${(ns / N).toFixed(0)} ns per look-up (seen ${seen})`);
await engine.close();
