/**
 * @module Timers a run arms besides its steps, per checkout: the
 * side-by-side workload (10-step runs on a MemoryStore, submit, `wait`
 * and `outcome`, CONC in flight; bench/support/step-workload.ts) with
 * `setTimeout` and `clearTimeout` counted over N runs after a warm-up. The
 * step path's own timers (the queue's flush window, leases) are the same in
 * both checkouts, so a difference is the wait's: before the wait's shared
 * poll every round that waited armed and cleared one.
 *
 * Also the lent reads of each run's terminal record (a wait's and an
 * outcome's reads of its end, which decode it unless its record is kept).
 *
 * Counts, not times: they repeat to within a few per cent at any load
 * (how many waits outlive a poll moves with timing).
 *
 * Run: `npm run build` in each checkout, then
 * `N=1000 CONC=50 ROUNDS=3 npx tsx bench/run-overheads.ts <checkout>...` (the checkouts alternate, round by round).
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 1000);
const CONC = env("CONC", 50);
const ROUNDS = env("ROUNDS", 3);
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");

let armed = 0;
let cleared = 0;
const realSet = globalThis.setTimeout;
const realClear = globalThis.clearTimeout;
globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
  armed++;
  return realSet(...args);
}) as typeof setTimeout;
globalThis.clearTimeout = ((t: Parameters<typeof clearTimeout>[0]) => {
  cleared++;
  return realClear(t);
}) as typeof clearTimeout;

const trees = await Promise.all(dirs.map((d) => loadCheckout<Taquba>(d)));
// Lent reads of a terminal record's key (`workflow/outcomes/...`): the wait's and the outcome's reads of a run's end.
let terminalReads = 0;
for (const T of trees) {
  const proto = T.Queue.prototype as unknown as { kvBorrowNow(k: string | { key: string }): unknown };
  const borrow = proto.kvBorrowNow;
  proto.kvBorrowNow = function (this: unknown, k: string | { key: string }) {
    if ((typeof k === "string" ? k : k.key).startsWith("workflow/outcomes/")) terminalReads++;
    return borrow.call(this, k);
  };
}
console.log(`N=${N} CONC=${CONC} ROUNDS=${ROUNDS}, ${loadAverageText()}`);
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < dirs.length; i++) {
    const w = await openStepWorkload(trees[i]!, new trees[i]!.MemoryStore());
    try {
      await w.drive(50, 10);
      const a0 = armed;
      const c0 = cleared;
      const t0 = terminalReads;
      await w.drive(N, CONC);
      console.log(
        `round ${round} ${dirs[i]}: ${((armed - a0) / N).toFixed(2)} timers armed, ${((cleared - c0) / N).toFixed(2)} cleared, ` +
          `${((terminalReads - t0) / N).toFixed(2)} terminal record reads per run`,
      );
    } finally {
      await w.close();
    }
  }
}
