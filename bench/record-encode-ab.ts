/**
 * @module CPU per encode of the records a workflow writes as its steps
 * settle and its runs start and end (a settled step's history entry, as the
 * step's settlement writes it and as the stored form builds it; a run index
 * entry; a child's end), for two or more checkouts' sources loaded side by
 * side in one process, round by round in alternating order so each runs
 * under the same load: what an encoder's own-field writes cost with
 * `Object.prototype` clean.
 *
 * Reported per checkout and record: the minimum, 25th percentile and median
 * ns CPU per encode (`process.cpuUsage`, user + system) over the rounds
 * after the first four; with two checkouts also the median, 25th and 75th
 * percentile of the second's time over the first's, round by round.
 *
 * Run: `ROUNDS=60 R=20000 npx tsx bench/record-encode-ab.ts <checkout A> <checkout B>`
 * (each a directory holding `runtime/` below this checkout, so that its
 * imports resolve against this checkout's node_modules).
 */
import { checkoutArgs, type Kind, runKindRounds } from "./support/kind-rounds.js";
import { loadCheckout } from "./support/step-workload.js";

type History = typeof import("../runtime/workflow/runs/history-records.js");
type Index = typeof import("../runtime/workflow/runs/run-index.js");
type ChildEnd = typeof import("../runtime/workflow/children/child-end.js");

const dirs = checkoutArgs();
const histories: History[] = [];
const indexes: Index[] = [];
const childEnds: ChildEnd[] = [];
for (const d of dirs) {
  histories.push(await loadCheckout<History>(d, "runtime/workflow/runs/history-records.ts"));
  indexes.push(await loadCheckout<Index>(d, "runtime/workflow/runs/run-index.ts"));
  childEnds.push(await loadCheckout<ChildEnd>(d, "runtime/workflow/children/child-end.ts"));
}

/** A continuing step's facts, as its settlement has them: one attempt, a named step, a transition, the next payload. */
const facts = {
  step: 3,
  name: "charge",
  payloadBytes: 32,
  earlier: [],
  current: { attempt: 1, startedAtMs: 1_700_000_000_000, endedAtMs: 1_700_000_000_004, outcome: "continued" as const },
  transition: { kind: "immediate" as const },
  memoKeys: ["run:quote"],
  kvPuts: [],
  kvDeletes: [],
  next: new Uint8Array(32),
};
const target = { copiesCommittedValues: true };
const entry = {
  submittedAtMs: 1_700_000_000_000,
  headers: { tenant: "a" },
  workflow: "billing",
  input: new Uint8Array(32),
  inputSha256: "00".repeat(32),
  priority: 2,
};
const ended = { runId: "child-000001" as never, status: "succeeded" as const, finalStep: 3, headers: {}, result: new Uint8Array(32) };
const source = { token: "t", memoPrefix: "m" };

let sink = 0;
const kinds: Kind[] = [
  ["step history, settlement", (i) => void (sink += (histories[i]!.encodeStepFactsForCommit(facts, target) as unknown as Uint8Array).byteLength)],
  ["step history, stored form", (i) => void (sink += histories[i]!.encodeStepRecord(histories[i]!.stepRecordOf(facts)).byteLength)],
  ["run index entry", (i) => void (sink += indexes[i]!.encodeIndexEntry(entry).byteLength)],
  ["child end", (i) => void (sink += childEnds[i]!.encodeChildEnd(ended, source).byteLength)],
];

runKindRounds({ dirs, kinds, verb: "encode", sink: () => sink });
