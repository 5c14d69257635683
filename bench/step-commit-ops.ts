/**
 * @module The engine ops (keys put or deleted) of each commit of the
 * side-by-side workload (bench/support/step-workload.ts: 10-step runs whose
 * runner continues at once, MemoryStore), by the commit's shape: the sorted
 * list of its ops, ids, times and counters in keys folded, so every
 * continuing step's chained ack shows as one shape with its exact op
 * count. Each commit's batch is taken where the engine hands it to its WAL
 * (`WalWriter.append`, once per applied commit). Prints the shapes by
 * commits per step, then ops per step and per commit.
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/step-commit-ops.ts <checkout>`.
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, measureOnMemoryStore, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

type WalModule = typeof import("../runtime/engine/wal-writer.js");
type Op = { kind: "put" | "delete"; key: string };

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);
const W = await loadCheckout<WalModule>(dir, "dist/runtime/engine/wal-writer.js");

const family = (k: string) =>
  k
    .replace(/[0-9A-Z]{20,}/g, "<id>")
    .replace(/\d{6,}/g, "<n>")
    .replace(/:\d+$/, ":<n>")
    .replace(/\/\d+$/, "/<n>");

let on = false;
const shapes = new Map<string, number>();
let commits = 0;
let ops = 0;
const proto = W.WalWriter.prototype as unknown as { append: (this: unknown, batch: readonly Op[], ...rest: unknown[]) => unknown };
const append = proto.append;
proto.append = function (this: unknown, batch: readonly Op[], ...rest: unknown[]) {
  if (on) {
    commits++;
    ops += batch.length;
    const shape = batch
      .map((op) => `${op.kind === "put" ? "put" : "del"} ${family(op.key)}`)
      .sort()
      .join(", ");
    const key = `${batch.length} ops: ${shape}`;
    shapes.set(key, (shapes.get(key) ?? 0) + 1);
  }
  return append.call(this, batch, ...rest);
};

await measureOnMemoryStore(T, N, CONC, (m) => {
  on = m;
});
const steps = N * M;
console.log(`${dir}: N=${N} CONC=${CONC} (${steps} steps), load ${loadAverageText()}`);
for (const [k, v] of [...shapes].sort((a, b) => b[1] - a[1])) {
  if (v / steps >= 0.005) console.log(`${(v / steps).toFixed(3).padStart(7)} commits per step of ${k}`);
}
console.log(`${(ops / steps).toFixed(3)} engine ops per step, ${(commits / steps).toFixed(3)} commits per step, ${(ops / commits).toFixed(2)} ops per commit`);
