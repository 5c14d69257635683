/**
 * @module The cost of encoding a settled step's history entry: the record
 * built (`stepRecordOf`) and encoded from its stored form
 * (`encodeStepRecordForCommit`), against the entry written field by field
 * from the step's facts (`encodeStepFactsForCommit`), over 2,000 facts
 * shaped as a continuing step's (a first attempt, an immediate transition,
 * a 40-byte next payload, no memo or KV keys), written as shared views as
 * over a MemoryStore. Prints CPU ns per entry of the one named in WHICH (or
 * both, alternating) over REPS passes. On a busy machine time it under
 * callgrind instead, one process per encoder at two REPS, and divide the
 * difference of their instruction counts by the difference of entries
 * encoded (the JIT's warm-up is then in both).
 *
 * Run: `npm run build`, then `REPS=300 npx tsx bench/step-record-encode.ts <checkout>`, or
 * `WHICH=facts REPS=10 valgrind --tool=callgrind node --import tsx bench/step-record-encode.ts <checkout>`
 * and the same with REPS=40, and with `WHICH=record`.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const REPS = Number(process.env.REPS ?? 300);
const WHICH = process.env.WHICH ?? "both";
const ENTRIES = 2000;
const COPIES = { copiesCommittedValues: true };

type Encode = (f: object, target: object) => Uint8Array;
const mod = (await import(pathToFileURL(resolve(dir, "dist/runtime/workflow/runs/history-records.js")).href)) as Record<string, (...a: unknown[]) => unknown>;
const { stepRecordOf, encodeStepRecordForCommit, encodeStepFactsForCommit } = mod;
if (stepRecordOf === undefined || encodeStepRecordForCommit === undefined || encodeStepFactsForCommit === undefined)
  throw new Error(`${dir} has no encodeStepFactsForCommit`);
const viaRecord: Encode = (f, t) => encodeStepRecordForCommit!(stepRecordOf!(f), t) as Uint8Array;
const fromFacts: Encode = (f, t) => encodeStepFactsForCommit!(f, t) as Uint8Array;

const NONE: readonly never[] = Object.freeze([]);
function facts(i: number): object {
  return {
    step: i % 10,
    name: undefined,
    payloadBytes: 40,
    earlier: NONE,
    current: { attempt: 1, startedAtMs: 1733380000000 + i, endedAtMs: 1733380000003 + i, outcome: "continued" },
    signal: undefined,
    transition: { kind: "immediate" },
    memoKeys: NONE,
    kvPuts: NONE,
    kvDeletes: NONE,
    payload: undefined,
    next: new Uint8Array(40).fill(i & 255),
    signalPayload: undefined,
  };
}
const all = Array.from({ length: ENTRIES }, (_, i) => facts(i));
for (const f of all) {
  if (Buffer.compare(viaRecord(f, {}), fromFacts(f, {})) !== 0) throw new Error("the two encoders differ");
}

function time(name: string, encode: Encode): void {
  let bytes = 0;
  const c0 = process.cpuUsage();
  for (let k = 0; k < REPS; k++) for (const f of all) bytes += encode(f, COPIES).byteLength;
  const c = process.cpuUsage(c0);
  console.log(`${name}: ${(((c.user + c.system) * 1000) / (REPS * ENTRIES)).toFixed(0)} ns CPU per entry (${bytes / (REPS * ENTRIES)} bytes each)`);
}

console.log(`${dir}: REPS=${REPS} entries=${ENTRIES} WHICH=${WHICH} load ${loadAverageText()}`);
if (WHICH === "record" || WHICH === "both") time("stepRecordOf + encodeStepRecordForCommit", viaRecord);
if (WHICH === "facts" || WHICH === "both") time("encodeStepFactsForCommit", fromFacts);
if (WHICH === "both") {
  time("stepRecordOf + encodeStepRecordForCommit", viaRecord);
  time("encodeStepFactsForCommit", fromFacts);
}
