/**
 * @module CPU per record of the queue's direct MessagePack encoders
 * (`packRecord`, `packPlain`) of two or more built checkouts, in one
 * process, round by round in alternating order, so each checkout runs under
 * the same load. The records are a workflow step's: a chained step's job
 * record written as a shared view (what every settlement that chains the
 * next step encodes), its history entry and its step pointer (the
 * workflow's plain records, each an array of its own).
 *
 * Reported per checkout and record: the minimum, 25th percentile and median
 * ns CPU per record over the rounds after the first four; with two
 * checkouts also the median, 25th and 75th percentile of the second's time
 * over the first's, round by round (the ratio moves less with the load than
 * either time).
 *
 * Run: `npm run build` in each checkout, then
 * `ROUNDS=300 R=5000 npx tsx bench/record-pack-ab.ts <checkout A> <checkout B>`.
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout } from "./support/step-workload.js";

type RecordPack = typeof import("../runtime/queue/record-pack.js");
type RecordCodec = typeof import("../runtime/queue/record.js");
type JobRecord = import("../runtime/queue/record.js").JobRecord;

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ROUNDS = env("ROUNDS", 300);
const R = env("R", 5000);
const WARM_ROUNDS = 4;

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");

const id = (i: number) => `01M913J8FSCWVKEGKCP67SHD${String(i % 100).padStart(2, "0")}`;
const stepRecord = (i: number): JobRecord => ({
  id: id(i),
  queue: "workflow-steps",
  state: "claimed",
  seq: "01M913J8FSCWVKEGKCP67SHDAQ",
  priority: 1000,
  payload: new Uint8Array(4),
  headers: { "workflow.run_id": "01M913J8BT2KFQCWYT06877MWB", "workflow.step": String(i % 10) },
  attempts: 1,
  maxAttempts: 3,
  enqueuedAt: 1796407370233 + i,
  claimedAt: 1796407370233 + i,
});
const history = (i: number) => ({
  s: i % 10,
  b: 4,
  a: [[1, 1796407368498 + i, 1796407368556 + i, "continued"]],
  tr: { kind: "immediate" },
  nx: new Uint8Array(4),
});
const pointer = (i: number) => ({ step: i % 10, jobId: id(i) });

interface Checkout {
  dir: string;
  pack: RecordPack;
  /** The job records as a settlement copies them (`copyJob`: every field, in the record's order). */
  records: JobRecord[];
  times: number[][];
}

const histories = Array.from({ length: 1000 }, (_, i) => history(i));
const pointers = Array.from({ length: 1000 }, (_, i) => pointer(i));
const kinds: [string, (c: Checkout, i: number) => Uint8Array | undefined][] = [
  ["job record (shared view)", (c, i) => c.pack.packRecord(c.records[i % 1000]!, true)],
  ["history entry", (c, i) => c.pack.packPlain(histories[i % 1000])],
  ["step pointer", (c, i) => c.pack.packPlain(pointers[i % 1000])],
];

const checkouts: Checkout[] = [];
for (const dir of dirs) {
  const pack = await loadCheckout<RecordPack>(dir, "dist/runtime/queue/record-pack.js");
  const codec = await loadCheckout<RecordCodec>(dir, "dist/runtime/queue/record.js");
  const records = Array.from({ length: 1000 }, (_, i) => codec.copyJob(stepRecord(i)));
  checkouts.push({ dir, pack, records, times: kinds.map(() => []) });
}

console.log(`ROUNDS=${ROUNDS} R=${R} records per round and kind; load ${loadAverageText()}`);
let sink = 0;
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? checkouts : [...checkouts].reverse();
  for (const c of order) {
    for (const [k, [, encode]] of kinds.entries()) {
      const t0 = process.cpuUsage();
      for (let i = 0; i < R; i++) sink += encode(c, i)!.byteLength;
      const t = process.cpuUsage(t0);
      c.times[k]!.push(((t.user + t.system) * 1000) / R);
    }
  }
}

const at = (sorted: number[], q: number) => sorted[Math.floor(sorted.length * q)]!;
for (const c of checkouts) {
  for (const [k, [name]] of kinds.entries()) {
    const t = c.times[k]!.slice(WARM_ROUNDS).sort((a, b) => a - b);
    console.log(`${c.dir} ${name}: min ${t[0]!.toFixed(0)}, p25 ${at(t, 0.25).toFixed(0)}, median ${at(t, 0.5).toFixed(0)} ns CPU per record`);
  }
}
if (checkouts.length === 2) {
  const [a, b] = checkouts as [Checkout, Checkout];
  for (const [k, [name]] of kinds.entries()) {
    const ratios = b.times[k]!.slice(WARM_ROUNDS)
      .map((x, i) => x / a.times[k]![i + WARM_ROUNDS]!)
      .sort((x, y) => x - y);
    console.log(`${name}: B/A per round median ${at(ratios, 0.5).toFixed(3)} (p25 ${at(ratios, 0.25).toFixed(3)}, p75 ${at(ratios, 0.75).toFixed(3)})`);
  }
}
console.log(`load at end ${loadAverageText()} (checksum ${sink % 997})`);
