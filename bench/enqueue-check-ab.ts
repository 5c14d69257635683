/**
 * @module CPU per checked enqueue item of two or more compiled checkouts,
 * round by round in one process: what a step's next job costs to stage
 * (`checkedEnqueueItem`, as `SettlementEffects.enqueue` calls it) and to
 * take at the commit (`ownEnqueueItem`, as `prepare` calls it), with the
 * options a step's next job has (job id, dedup key, priority, attempts,
 * two headers). A checkout with `rebuiltEnqueueItem` (the workflow's next
 * step, whose strings are not checked again) is measured that way too, as
 * `<checkout>:rebuilt`. Reported per round (`process.cpuUsage`, user +
 * system), then the median of the rounds after the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `CALLS=1000000 ROUNDS=10 npx tsx bench/enqueue-check-ab.ts <checkout A> <checkout B>`.
 */
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadCheckout } from "./support/step-workload.js";

type Checks = typeof import("../runtime/queue/validate-enqueue.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 1_000_000);
const ROUNDS = env("ROUNDS", 10);

const checkouts = process.argv.slice(2);
if (checkouts.length === 0) throw new Error("name one or more built checkouts");
const dirs: string[] = [];
const mods: Checks[] = [];
const stages: Stage[] = [];
for (const d of checkouts) {
  const m = await loadCheckout<Checks & { rebuiltEnqueueItem?: Stage }>(d, "dist/runtime/queue/validate-enqueue.js");
  dirs.push(d);
  mods.push(m);
  stages.push(m.checkedEnqueueItem);
  if (m.rebuiltEnqueueItem === undefined) continue;
  dirs.push(`${d}:rebuilt`);
  mods.push(m);
  stages.push(m.rebuiltEnqueueItem);
}

const payload = new Uint8Array(32);
let sink = 0;
/** The staging function of a checkout: the checked one, or the rebuilt one where it has it and `rebuilt` is asked. */
type Stage = (
  queue: string,
  payload: Uint8Array,
  opts: { jobId: string; dedupKey: string; priority: number; maxAttempts: number; headers: Record<string, string> },
) => ReturnType<Checks["checkedEnqueueItem"]>;

function measure(m: Checks, stage: Stage): number {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const opts = { jobId: "01JEQ000000000000000000000", dedupKey: `run-1/${i}`, priority: 0, maxAttempts: 3, headers: { "x-run": "run-1", "x-step": "1" } };
    const item = stage("steps", payload, opts);
    sink += m.ownEnqueueItem(item).queueName.length;
  }
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / CALLS;
}

console.log(`checked enqueue item CPU ns per item (staged, then taken at the commit); CALLS=${CALLS} ROUNDS=${ROUNDS}`);
printMedians(dirs, await alternateRounds(dirs, ROUNDS, (i) => measure(mods[i]!, stages[i]!)), "ns per item");
if (sink === 0) console.log("");
