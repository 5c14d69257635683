/**
 * @module CPU per job record of the queue's decode and copy (`decodeJob`,
 * `copyJob`) of two or more checkouts' sources, in one process, round by
 * round in alternating order, so each runs under the same load: what the
 * checks of `Object.prototype` for a record's field names cost on the
 * claim's path with the prototype clean.
 *
 * Reported per checkout: the minimum, 25th percentile and median ns CPU per
 * record (one decode and one copy) over the rounds after the first four;
 * with two checkouts also the median, 25th and 75th percentile of the
 * second's time over the first's, round by round.
 *
 * Run: `ROUNDS=200 R=20000 npx tsx bench/job-record-own-fields-ab.ts <checkout A> <checkout B>`
 * (each a directory holding `runtime/`, resolved against this checkout's
 * node_modules).
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout } from "./support/step-workload.js";

type RecordCodec = typeof import("../runtime/queue/record.js");
type JobRecord = import("../runtime/queue/record.js").JobRecord;

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ROUNDS = env("ROUNDS", 200);
const R = env("R", 20_000);
const WARM_ROUNDS = 4;

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more checkouts");

const record = (i: number): JobRecord => ({
  id: `01M913J8FSCWVKEGKCP67SHD${String(i % 100).padStart(2, "0")}`,
  queue: "jobs",
  state: "pending",
  seq: "01M913J8FSCWVKEGKCP67SHDAQ",
  priority: 0,
  payload: new Uint8Array(64),
  headers: { tenant: "a" },
  attempts: 1,
  maxAttempts: 3,
  enqueuedAt: 1_700_000_000_000,
});

const codecs: RecordCodec[] = [];
for (const d of dirs) codecs.push(await loadCheckout<RecordCodec>(d, "runtime/queue/record.ts"));
const encoded = Array.from({ length: 100 }, (_, i) => codecs[0]!.encodeJob(record(i)));

let sink = 0;
function round(c: RecordCodec): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < R; i++) {
    const r = c.decodeJob("j/x", encoded[i % 100]!);
    sink += c.copyJob(r).attempts;
  }
  const t = process.cpuUsage(t0);
  return ((t.user + t.system) * 1000) / R;
}

const times: number[][] = dirs.map(() => []);
for (let k = 0; k < ROUNDS; k++) {
  const order = k % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
  for (const i of order) {
    const ns = round(codecs[i]!);
    if (k >= WARM_ROUNDS) times[i]!.push(ns);
  }
}

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
console.log(`rounds ${ROUNDS}, ${R} records each, load ${loadAverageText()}, node ${process.version}, sink ${sink % 10}`);
dirs.forEach((d, i) => {
  const t = times[i]!;
  console.log(`${d}: ns CPU per decode and copy: min ${q(t, 0).toFixed(1)}, p25 ${q(t, 0.25).toFixed(1)}, median ${q(t, 0.5).toFixed(1)}`);
});
if (dirs.length === 2) {
  const ratios = times[0]!.map((a, k) => times[1]![k]! / a);
  console.log(`second / first, round by round: median ${q(ratios, 0.5).toFixed(3)}, p25 ${q(ratios, 0.25).toFixed(3)}, p75 ${q(ratios, 0.75).toFixed(3)}`);
}
