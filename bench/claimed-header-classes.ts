/**
 * @module Hidden classes of the headers of jobs claimed at their insert
 * (`Queue.ackClaimingNext`, the workflow's chained step), in a compiled
 * checkout: how many of N consecutive chained jobs have headers of another
 * hidden class than the job before, and what a header lookup that misses
 * (as the step path's checks of its reserved headers do) costs on them.
 *
 * The headers are built as the workflow builds a next step's (a run id and
 * a step number, assigned into a fresh literal). One hidden class for all
 * keeps the lookups' inline caches monomorphic; a class per job makes every
 * lookup megamorphic, and every claim build a class of its own.
 *
 * The count is exact at any load; the lookup time is a loop's and moves
 * with the load (compare checkouts in the same minute).
 *
 * Run: `npm run build` in the checkout, then
 * `N=2000 node --allow-natives-syntax --import tsx bench/claimed-header-classes.ts <checkout>`.
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

const N = Number(process.env.N ?? 2000);
const LOOKUPS = Number(process.env.LOOKUPS ?? 4_000_000);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");

// The natives syntax is parsed only in code compiled at run time, and only with --allow-natives-syntax.
let sameClass: (a: object, b: object) => boolean;
try {
  sameClass = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;
} catch {
  throw new Error("run with node --allow-natives-syntax --import tsx");
}

const T = await loadCheckout<Taquba>(dir);
const enc = new TextEncoder();
const q = await T.Queue.open(new T.MemoryStore(), "bench");
await q.enqueue("steps", enc.encode("0"));
let job = (await q.claim("steps"))!;
const takeIt = { index: 0, reserve: () => true };
const headers: Readonly<Record<string, string>>[] = [];
for (let i = 1; i <= N; i++) {
  const h: Record<string, string> = {};
  h["workflow.run_id"] = `run-${i}`;
  h["workflow.step"] = String(i);
  const res = await q.ackClaimingNext(job, new T.SettlementEffects().enqueue("steps", enc.encode(String(i)), { headers: h }), takeIt);
  if (res.next === undefined) throw new Error("the queue did not hand the next job out claimed");
  job = res.next;
  headers.push(job.headers);
}
let changes = 0;
for (let i = 1; i < headers.length; i++) if (!sameClass(headers[i]!, headers[i - 1]!)) changes++;

const t0 = process.cpuUsage();
let hits = 0;
for (let k = 0; k < LOOKUPS; k++) {
  const h = headers[k % headers.length]!;
  if (h["workflow.terminal"] !== undefined) hits++;
}
const cpu = process.cpuUsage(t0);
await q.close();
console.log(`${dir}: N=${N} load ${loadAverageText()}`);
console.log(`chained jobs whose headers changed hidden class: ${changes} of ${N - 1}`);
console.log(`a missing header's lookup: ${(((cpu.user + cpu.system) * 1000) / LOOKUPS).toFixed(1)} ns CPU (${hits} hits)`);
