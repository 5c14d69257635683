/**
 * @module CPU per decode of the records a workflow step reads (its job
 * record with the workflow's headers, the run record, the step pointer, a
 * terminal record), for two or more checkouts' sources loaded side by side
 * in one process, round by round in alternating order so each runs under
 * the same load: what a decoder's checks cost with `Object.prototype`
 * clean.
 *
 * Reported per checkout and record: the minimum, 25th percentile and median
 * ns CPU per decode (`process.cpuUsage`, user + system) over the rounds
 * after the first four; with two checkouts also the median, 25th and 75th
 * percentile of the second's time over the first's, round by round.
 *
 * With `SETTER_HEADER=1` the rounds run while `Object.prototype` holds a
 * setter named `tenant`, a header of the job and run records (a header no
 * decoder can check for in advance): what a decode that finds a field taken
 * and decodes again costs.
 *
 * Run: `ROUNDS=60 R=20000 npx tsx bench/record-decode-ab.ts <checkout A> <checkout B>`
 * (each a directory holding `runtime/` below this checkout, so that its
 * imports resolve against this checkout's node_modules).
 */
import { checkoutArgs, type Kind, runKindRounds } from "./support/kind-rounds.js";
import { loadCheckout } from "./support/step-workload.js";

type JobCodec = typeof import("../runtime/queue/record.js");
type RecordCodec = typeof import("../runtime/workflow/records/records.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const dirs = checkoutArgs();
const jobs: JobCodec[] = [];
const records: RecordCodec[] = [];
for (const d of dirs) {
  jobs.push(await loadCheckout<JobCodec>(d, "runtime/queue/record.ts"));
  records.push(await loadCheckout<RecordCodec>(d, "runtime/workflow/records/records.ts"));
}

const j0 = jobs[0]!;
const r0 = records[0]!;
const stepJob = j0.encodeJob({
  id: "01M913J8FSCWVKEGKCP67SHD00",
  queue: "workflow-steps",
  state: "pending",
  seq: "01M913J8FSCWVKEGKCP67SHDAQ",
  priority: 0,
  payload: new Uint8Array(32),
  headers: { "workflow.run-id": "run-000001", "workflow.step": "3", tenant: "a" },
  attempts: 0,
  maxAttempts: 3,
  enqueuedAt: 1_700_000_000_000,
});
const run = r0.encodeRunRecord({
  runId: "run-000001",
  submittedAtMs: 1,
  inputSha256: "00",
  incarnation: "i1",
  submission: "i1",
  headers: { tenant: "a" },
  memoPrefix: "m",
});
const pointer = r0.encodeStepPointer({ step: 3, jobId: "01M913J8FSCWVKEGKCP67SHD00" });
const terminal = r0.encodeTerminalRecord({
  runId: "run-000001" as never,
  status: "succeeded",
  finalStep: 3,
  terminatedAtMs: 2,
  incarnation: "i1",
  token: "t",
  memoPrefix: "m",
  submittedAtMs: 1,
});

let sink = 0;
const kinds: Kind[] = [
  ["step job", (i) => void (sink += jobs[i]!.decodeJob("j/x", stepJob).attempts)],
  ["run record", (i) => void (sink += records[i]!.decodeRunRecord(run, "k").submittedAtMs)],
  ["step pointer", (i) => void (sink += records[i]!.decodeStepPointer(pointer, "k").step)],
  ["terminal record", (i) => void (sink += records[i]!.decodeTerminalRecord(terminal, "k").finalStep)],
];

if (env("SETTER_HEADER", 0) === 1) Object.defineProperty(Object.prototype, "tenant", { get: () => undefined, set: () => {}, configurable: true });

runKindRounds({ dirs, kinds, verb: "decode", sink: () => sink });
