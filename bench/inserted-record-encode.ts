/**
 * @module The cost of encoding the record of a chained step's job: the
 * record codec's direct encoder (`packRecord`, enumerating the record)
 * against `encodeInsertedJob` (its fields in the insert's order), over
 * 2,000 records shaped as `insertJobRecord` builds them (claimed, a 40-byte
 * payload, the workflow's two headers), written as shared views as over a
 * MemoryStore. Prints CPU ns per record of the one named in WHICH (or both,
 * alternating) over REPS passes. On a busy machine time it under callgrind
 * instead, one process per encoder at two REPS, and divide the difference
 * of their instruction counts by the difference of records encoded (the JIT's
 * warm-up is then in both).
 *
 * Run: `npm run build`, then `REPS=300 npx tsx bench/inserted-record-encode.ts <checkout>`, or
 * `WHICH=inserted REPS=10 valgrind --tool=callgrind node --import tsx bench/inserted-record-encode.ts <checkout>`
 * and the same with REPS=40, and with `WHICH=packRecord`.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const REPS = Number(process.env.REPS ?? 300);
const WHICH = process.env.WHICH ?? "both";
const RECORDS = 2000;

type Encode = (r: object, shared: boolean) => Uint8Array | undefined;
const load = async (path: string) => (await import(pathToFileURL(resolve(dir, "dist/runtime/queue", path)).href)) as Record<string, Encode>;
const { packRecord } = await load("record-pack.js");
const { encodeInsertedJob } = await load("inserted-record.js");
if (packRecord === undefined || encodeInsertedJob === undefined) throw new Error(`${dir} has no encodeInsertedJob`);

// Seeded, so every process encodes the same records.
let seed = 1;
const next = () => (seed = (seed * 48271) % 2147483647);
const ulid = () => `01J${next().toString(36).toUpperCase().padEnd(23, "X")}`;
function insertedRecord(i: number): object {
  const r: Record<string, unknown> = {
    id: ulid(),
    queue: "workflow-steps",
    state: "claimed",
    seq: ulid(),
    priority: 0,
    payload: new Uint8Array(40).fill(i & 255),
    payloadRef: undefined,
    payloadSize: undefined,
    headers: { "workflow.run_id": ulid(), "workflow.step": String(i % 10) },
    attempts: 1,
    maxAttempts: 3,
    enqueuedAt: 1733380000000 + i,
    runAt: undefined,
    dedupKey: undefined,
    debounceKey: undefined,
  };
  r.claimedAt = 1733380000000 + i;
  return r;
}
const records = Array.from({ length: RECORDS }, (_, i) => insertedRecord(i));
for (const r of records) {
  if (Buffer.compare(packRecord(r, false)!, encodeInsertedJob(r, false)!) !== 0) throw new Error("the two encoders differ");
}

function time(name: string, encode: Encode): void {
  let bytes = 0;
  const c0 = process.cpuUsage();
  for (let k = 0; k < REPS; k++) for (const r of records) bytes += encode(r, true)!.byteLength;
  const c = process.cpuUsage(c0);
  console.log(`${name}: ${(((c.user + c.system) * 1000) / (REPS * RECORDS)).toFixed(0)} ns CPU per record (${bytes / (REPS * RECORDS)} bytes each)`);
}

console.log(`${dir}: REPS=${REPS} records=${RECORDS} WHICH=${WHICH} load ${loadAverageText()}`);
if (WHICH === "packRecord" || WHICH === "both") time("packRecord", packRecord);
if (WHICH === "inserted" || WHICH === "both") time("encodeInsertedJob", encodeInsertedJob);
if (WHICH === "both") {
  time("packRecord", packRecord);
  time("encodeInsertedJob", encodeInsertedJob);
}
