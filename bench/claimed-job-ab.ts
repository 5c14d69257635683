/**
 * @module The claimed job a claim hands out (`makeClaimedJob`), made CALLS
 * times per round in each of two or more built checkouts, rounds
 * alternating the order: ns per claimed job, median of the rounds after
 * the first two. Its parts (the record, the lease entry) are made once, as
 * a claim has them ready when it builds the job; `READ=1` also reads each
 * job's `cancelSignal.aborted` through the queue's `cancelRequestedOf` (as
 * the workflow's step processor does after its runner).
 *
 * Run: `npm run build` in each checkout, then
 * `CALLS=200000 ROUNDS=12 npx tsx bench/claimed-job-ab.ts <checkout A> <checkout B>`.
 */
import { loadCheckout } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";

type ClaimedJobModule = typeof import("../runtime/queue/claimed-job.js");
type CancelModule = typeof import("../runtime/queue/cancel-state.js");
type RegistryModule = typeof import("../runtime/queue/lease-registry.js");
type Record = import("../runtime/queue/record.js").JobRecord;

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 200_000);
const ROUNDS = env("ROUNDS", 12);
const READ = process.env.READ === "1";

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
interface Loaded {
  jobs: ClaimedJobModule;
  cancel: CancelModule;
  registry: InstanceType<RegistryModule["LeaseRegistry"]>;
}
const mods: Loaded[] = [];
for (const d of dirs) {
  const jobs = await loadCheckout<ClaimedJobModule>(d, "dist/runtime/queue/claimed-job.js");
  const cancel = await loadCheckout<CancelModule>(d, "dist/runtime/queue/cancel-state.js");
  const { LeaseRegistry } = await loadCheckout<RegistryModule>(d, "dist/runtime/queue/lease-registry.js");
  mods.push({ jobs, cancel, registry: new LeaseRegistry() });
}

const clock = { now: () => 1_700_000_000_000 } as unknown as import("../runtime/clock.js").TimedClock;
const owner = {};
const payload = new Uint8Array(8);
const headers = { "workflow.run_id": "01J0000000000000000000000R", "workflow.step": "3" };
function record(): Record {
  return {
    id: "01J0000000000000000000000J",
    queue: "steps",
    state: "claimed",
    seq: "01J0000000000000000000000S",
    priority: 0,
    payload,
    headers,
    attempts: 1,
    maxAttempts: 3,
    enqueuedAt: 1_700_000_000_000,
    claimedAt: 1_700_000_000_000,
  } as Record;
}

let sink = 0;
function round(m: Loaded): number {
  const entry = m.registry.add("01J0000000000000000000000J", "steps", 1_700_000_030_000, false);
  const r = record();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) {
    const job = m.jobs.makeClaimedJob(owner, m.registry, clock, r, entry, payload);
    if (READ && m.cancel.cancelRequestedOf(job)) sink++;
    sink += job.attempt;
  }
  const ns = Number(process.hrtime.bigint() - t0) / CALLS;
  m.registry.remove("01J0000000000000000000000J");
  return ns;
}

console.log(`CALLS=${CALLS} ROUNDS=${ROUNDS} READ=${READ ? 1 : 0} load ${loadAverageText()}`);
printMedians(dirs, await alternateRounds(dirs, ROUNDS, (i) => round(mods[i]!)), "ns per claimed job");
console.log(`load at end ${loadAverageText()} (${sink > 0 ? "ran" : "?"})`);
