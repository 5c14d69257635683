/**
 * @module CPU of the polluted-prototype check the workflow's decoders make
 * (`ownFieldsIfPolluted` in `decodeMap`), beside the decode itself: round
 * by round in one process, each record decoded as the runtime decodes it
 * ("decode") and decoded then checked once more with the same names
 * ("decode + check"), so the difference is one check's cost. Also the
 * check alone, as a loop over the names and with them written out. Figures
 * are CPU ns per call (`process.cpuUsage`, user + system), the median of
 * the rounds after the first two.
 *
 * Run: `CALLS=1000000 ROUNDS=10 npx tsx bench/decoded-record-checks.ts`.
 */
import { prototypeHoldsAny } from "../runtime/own-fields.js";
import {
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeRunRecord,
  encodeStepPointer,
  encodeTerminalRecord,
} from "../runtime/workflow/records/records.js";
import type { RunId } from "../runtime/workflow/runs/run-id.js";
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 1_000_000);
const ROUNDS = env("ROUNDS", 10);

const RUN_NAMES = ["submission", "priority", "maxAttempts", "cancelRequested", "group", "parent", "hasChildren", "memoPrefix"];
const run = encodeRunRecord({ runId: "r1", submittedAtMs: 1, inputSha256: "00", incarnation: "i1", submission: "i1", headers: { a: "b" }, memoPrefix: "m" });
const pointer = encodeStepPointer({ step: 3, jobId: "01JABCDEFGHJKMNPQRSTVWXYZ0" });
const terminal = encodeTerminalRecord({
  runId: "r1" as RunId,
  status: "succeeded",
  finalStep: 3,
  terminatedAtMs: 2,
  incarnation: "i1",
  token: "t",
  memoPrefix: "m",
  submittedAtMs: 1,
});

/** Written out, as `decodeJob`'s check is: the form tried against the loop. */
function runNamesWrittenOut(): boolean {
  const p = Object.prototype;
  return (
    "submission" in p ||
    "priority" in p ||
    "maxAttempts" in p ||
    "cancelRequested" in p ||
    "group" in p ||
    "parent" in p ||
    "hasChildren" in p ||
    "memoPrefix" in p
  );
}

let sink = 0;
const variants: [string, () => void][] = [
  ["run: decode", () => void (sink += decodeRunRecord(run, "k").submittedAtMs)],
  ["run: decode + check", () => void (sink += decodeRunRecord(run, "k").submittedAtMs + (prototypeHoldsAny(RUN_NAMES) ? 1 : 0))],
  ["pointer: decode", () => void (sink += decodeStepPointer(pointer, "k").step)],
  ["pointer: decode + check", () => void (sink += decodeStepPointer(pointer, "k").step + (prototypeHoldsAny(["signalWait", "name"]) ? 1 : 0))],
  ["terminal: decode", () => void (sink += decodeTerminalRecord(terminal, "k").finalStep)],
  ["check alone, loop over 8 names", () => void (sink += prototypeHoldsAny(RUN_NAMES) ? 1 : 0)],
  ["check alone, 8 names written out", () => void (sink += runNamesWrittenOut() ? 1 : 0)],
];

const names = variants.map(([n]) => n);
const figures = await alternateRounds(names, ROUNDS, (i) => {
  const call = variants[i]![1];
  const before = process.cpuUsage();
  for (let n = 0; n < CALLS; n++) call();
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / CALLS;
});
printMedians(names, figures, "ns per call");
if (sink === -1) console.log(sink);
