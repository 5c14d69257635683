/**
 * @module CPU of a claim's read of a pending job record with the checks
 * that find a damaged one (`readIndexedJob`: the record's id against the
 * job it is read as, its queue against the queue claimed from, a decode
 * failure taken as a damaged record) beside the read as it was before them
 * (the record's key built, its bytes got and decoded), round by round in
 * one process, alternating their order. A Txn over a MemoryStore engine
 * holding JOBS job records of a 64-byte payload and three headers, each
 * read in turn. Figures are CPU ns per read (`process.cpuUsage`, user +
 * system), the median of the rounds after the first two.
 *
 * Run: `JOBS=1000 READS=2000000 ROUNDS=12 npx tsx bench/damaged-record-checks.ts`.
 */
import { Engine, MemoryStore, WriteBatch } from "../runtime/index.js";
import { readIndexedJob } from "../runtime/queue/damaged-record.js";
import { jobKey } from "../runtime/queue/keys.js";
import { decodeJob, encodeJob, type JobRecord } from "../runtime/queue/record.js";
import { Txn } from "../runtime/queue/txn.js";
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const JOBS = env("JOBS", 1000);
const READS = env("READS", 2_000_000);
const ROUNDS = env("ROUNDS", 12);

const engine = await Engine.open(new MemoryStore());
const ids: string[] = [];
const batch = new WriteBatch();
for (let i = 0; i < JOBS; i++) {
  const id = `01JD${String(i).padStart(22, "0")}`;
  ids.push(id);
  const r: JobRecord = {
    id,
    queue: "jobs",
    state: "pending",
    seq: id,
    priority: 1000,
    payload: new Uint8Array(64).fill(7),
    headers: { tenant: "acme", region: "eu-west-1", "trace.id": "4bf92f3577b34da6a3ce929d0e0e4736" },
    attempts: 0,
    maxAttempts: 3,
    enqueuedAt: 1_764_000_000_000,
  };
  batch.put(jobKey(id), encodeJob(r));
}
await engine.commit(batch);
const txn = new Txn(engine);

let sink = 0;
const variants: [string, (id: string) => void][] = [
  [
    "read as before",
    (id) => {
      const key = jobKey(id);
      const bytes = txn.get(key);
      if (bytes !== undefined) sink += decodeJob(key, bytes).attempts;
    },
  ],
  [
    "read with the damage checks",
    (id) => {
      const r = readIndexedJob(txn, id, "jobs");
      if (r !== undefined && "attempts" in r) sink += r.attempts;
    },
  ],
];

console.log(`JOBS=${JOBS} READS=${READS} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const names = variants.map(([n]) => n);
const figures = await alternateRounds(names, ROUNDS, (i) => {
  const read = variants[i]![1];
  const before = process.cpuUsage();
  for (let n = 0; n < READS; n++) read(ids[n % JOBS]!);
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / READS;
});
printMedians(names, figures, "ns per read");
console.log(`load at end ${loadAverageText()}`);
if (sink === -1) console.log(sink);
await engine.close();
