/**
 * @module The step object a runner is handed (`makeJobStep`; `makeStep` in
 * checkouts that have no `makeJobStep`), made CALLS times
 * per round in each of two or more built checkouts, rounds alternating the
 * order: ns per step object, median of the rounds after the first two. Its
 * parts are made once (placeholders where the step only holds a handle), as
 * the processor's are ready when it builds the step; `READ=1` also reads
 * each step's `cancelSignal` (a runner that looks at it).
 *
 * Run: `npm run build` in each checkout, then
 * `CALLS=200000 ROUNDS=12 npx tsx bench/step-object-ab.ts <checkout A> <checkout B>`.
 */
import { loadCheckout } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";

type Delivery = typeof import("../runtime/workflow/steps/delivery.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 200_000);
const ROUNDS = env("ROUNDS", 12);
const READ = process.env.READ === "1";

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Delivery[] = [];
for (const d of dirs) mods.push(await loadCheckout<Delivery>(d, "dist/runtime/workflow/steps/delivery.js"));

const controller = new AbortController();
const handle = Object.freeze({});
const parts = {
  runId: "01J0000000000000000000000R" as import("../runtime/workflow/runs/run-id.js").RunId,
  headers: {},
  jobId: "01J0000000000000000000000J",
  attempt: 1,
  maxAttempts: 3,
  isLastAttempt: () => false,
  cancel: { cancelSignal: controller.signal },
  lease: handle,
  memo: handle,
  runMemo: handle,
  effects: handle,
  kv: handle,
  children: handle,
} as unknown as import("../runtime/workflow/steps/delivery.js").DeliveryParts;
const payload = new Uint8Array(8);
// The claimed job's own fields, as the processor hands `makeJobStep` the job.
const job = {
  cancelSignal: controller.signal,
  id: parts.jobId,
  attempt: parts.attempt,
  maxAttempts: parts.maxAttempts,
  lease: parts.lease,
  isLastAttempt: () => false,
} as import("../runtime/workflow/steps/delivery.js").StepJob;
/** Older checkouts build the step from the parts object instead. */
type PartsBuilder = (
  p: typeof parts,
  stepNumber: number,
  payload: Uint8Array,
  signal: undefined,
) => { readonly stepNumber: number; readonly cancelSignal: AbortSignal };

/** A step object of checkout `m`, made as its step processor makes one. */
function stepOf(m: Delivery, stepNumber: number) {
  const fromParts = (m as unknown as { makeStep?: PartsBuilder }).makeStep;
  if (m.makeJobStep === undefined && fromParts !== undefined) return fromParts(parts, stepNumber, payload, undefined);
  return m.makeJobStep(parts.runId, parts.headers, job, parts.memo, parts.runMemo, parts.effects, parts.kv, parts.children, stepNumber, payload, undefined);
}

let sink = 0;
function round(m: Delivery): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) {
    const step = stepOf(m, i & 1023);
    if (READ && step.cancelSignal.aborted) sink++;
    sink += step.stepNumber;
  }
  return Number(process.hrtime.bigint() - t0) / CALLS;
}

console.log(`CALLS=${CALLS} ROUNDS=${ROUNDS} READ=${READ ? 1 : 0} load ${loadAverageText()}`);
printMedians(dirs, await alternateRounds(dirs, ROUNDS, (i) => round(mods[i]!)), "ns per step object");
console.log(`load at end ${loadAverageText()} (${sink > 0 ? "ran" : "?"})`);
