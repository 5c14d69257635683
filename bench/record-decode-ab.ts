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
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout } from "./support/step-workload.js";

type JobCodec = typeof import("../runtime/queue/record.js");
type RecordCodec = typeof import("../runtime/workflow/records/records.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ROUNDS = env("ROUNDS", 60);
const R = env("R", 20_000);
const WARM_ROUNDS = 4;

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more checkouts");
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
const kinds: [string, (i: number) => void][] = [
  ["step job", (i) => void (sink += jobs[i]!.decodeJob("j/x", stepJob).attempts)],
  ["run record", (i) => void (sink += records[i]!.decodeRunRecord(run, "k").submittedAtMs)],
  ["step pointer", (i) => void (sink += records[i]!.decodeStepPointer(pointer, "k").step)],
  ["terminal record", (i) => void (sink += records[i]!.decodeTerminalRecord(terminal, "k").finalStep)],
];

function round(i: number, decode: (i: number) => void): number {
  const t0 = process.cpuUsage();
  for (let n = 0; n < R; n++) decode(i);
  const t = process.cpuUsage(t0);
  return ((t.user + t.system) * 1000) / R;
}

if (env("SETTER_HEADER", 0) === 1) Object.defineProperty(Object.prototype, "tenant", { get: () => undefined, set: () => {}, configurable: true });

const times: number[][][] = kinds.map(() => dirs.map(() => []));
for (let k = 0; k < ROUNDS; k++) {
  const order = k % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
  for (const [kind, [, decode]] of kinds.entries()) {
    for (const i of order) {
      const ns = round(i, decode);
      if (k >= WARM_ROUNDS) times[kind]![i]!.push(ns);
    }
  }
}

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
console.log(`rounds ${ROUNDS}, ${R} decodes each, load ${loadAverageText()}, node ${process.version}, sink ${sink % 10}`);
for (const [kind, [name]] of kinds.entries()) {
  dirs.forEach((d, i) => {
    const t = times[kind]![i]!;
    console.log(`${name}, ${d}: ns CPU per decode: min ${q(t, 0).toFixed(1)}, p25 ${q(t, 0.25).toFixed(1)}, median ${q(t, 0.5).toFixed(1)}`);
  });
  if (dirs.length === 2) {
    const ratios = times[kind]![0]!.map((a, k) => times[kind]![1]![k]! / a);
    console.log(
      `${name}, second / first, round by round: median ${q(ratios, 0.5).toFixed(3)}, p25 ${q(ratios, 0.25).toFixed(3)}, p75 ${q(ratios, 0.75).toFixed(3)}`,
    );
  }
}
