/**
 * @module The step history, redrive, run index, group manifest and child-end records
 * read while `Object.prototype` holds one of their field names, each way a
 * library may put one there: a plain value, a getter, a setter, a
 * read-only field. Their encodings leave absent optional fields out, so a
 * read of one found the prototype's value (a step named by the prototype,
 * a redrive's planted error, an index entry's planted input or parent), and
 * the decoders' assignments of present ones handed them to a setter. Each
 * record reads back as written, with every field read while the prototype
 * is still polluted.
 */
import { describe, expect, it } from "vitest";
import { decodeChildEnd, encodeChildEnd } from "../../runtime/workflow/children/child-end.js";
import { decodeManifest, encodeManifest, type GroupManifest } from "../../runtime/workflow/groups/group-records.js";
import { decodeRedrives, decodeStepRecord, encodeRedrives, encodeStepRecord, type StepRecord } from "../../runtime/workflow/runs/history-records.js";
import type { RedriveHistory } from "../../runtime/workflow/runs/run-history.js";
import type { RunId } from "../../runtime/workflow/runs/run-id.js";
import { decodeIndexEntry, encodeIndexEntry, type IndexEntry } from "../../runtime/workflow/runs/run-index.js";
import { whileDefined, whilePolluted } from "../support/polluted-prototype.js";

type Mode = "value" | "getter" | "setter" | "read-only";
const MODES: Mode[] = ["value", "getter", "setter", "read-only"];

/** Runs `body` with each of `names` on `Object.prototype` as `mode` puts it there; what the setters were handed. */
async function underPollution(mode: Mode, names: readonly string[], body: () => void): Promise<unknown[]> {
  const handed: unknown[] = [];
  const planted = (n: string) => `planted ${n}`;
  const run = async () => body();
  if (mode === "value") await whilePolluted(Object.fromEntries(names.map((n) => [n, planted(n)])), run);
  else if (mode === "getter") await whileDefined(Object.fromEntries(names.map((n) => [n, { get: () => planted(n) }])), run);
  else if (mode === "setter") await whileDefined(Object.fromEntries(names.map((n) => [n, { get: () => undefined, set: (v: unknown) => handed.push(v) }])), run);
  else await whileDefined(Object.fromEntries(names.map((n) => [n, { value: planted(n), writable: false }])), run);
  return handed;
}

/** Every field `paths` names, read from `o` (a path through nested objects and arrays, dot-separated), as pairs: no object of the test's own to assign to under the pollution. */
function readPaths(o: unknown, paths: readonly string[]): [string, unknown][] {
  return paths.map((p) => {
    let v: unknown = o;
    for (const k of p.split(".")) v = v === undefined || v === null ? undefined : (v as Record<string, unknown>)[k];
    return [p, v];
  });
}

/** Asserts that `decode(bytes)` reads every path as `written` holds it, under each mode of pollution of `names`. */
async function readsAsWritten(written: unknown, bytes: Uint8Array, decode: (b: Uint8Array) => unknown, names: readonly string[], paths: readonly string[]) {
  const expected = readPaths(written, paths);
  for (const mode of MODES) {
    let got: [string, unknown][] | undefined;
    const handed = await underPollution(mode, names, () => {
      got = readPaths(decode(bytes), paths);
    });
    expect(got, mode).toEqual(expected);
    expect(handed, mode).toEqual([]);
  }
}

const STEP: StepRecord = {
  step: 2,
  payloadBytes: 5,
  attempts: [
    { attempt: 1, startedAtMs: 1, endedAtMs: 2, outcome: "retried", error: "boom" },
    { attempt: 2, startedAtMs: 3, endedAtMs: 4, outcome: "continued" },
  ],
  attemptsDropped: 0,
  memoKeys: [],
  memoKeysWritten: 0,
  kvPuts: [],
  kvDeletes: [],
  kvEffects: 0,
  signal: { key: "go", result: "timed_out" },
  transition: { kind: "immediate" },
};
const STEP_PATHS = [
  "step",
  "name",
  "payloadBytes",
  "attemptsDropped",
  "memoKeysWritten",
  "kvEffects",
  "payload",
  "next",
  "signalPayload",
  "signal.key",
  "signal.result",
  "signal.payloadBytes",
  "transition.kind",
  "transition.delayMs",
  "transition.key",
  "attempts.0.error",
  "attempts.0.stack",
  "attempts.1.error",
  "attempts.1.stack",
  "attempts.length",
  "memoKeys.length",
  "kvPuts.length",
  "kvDeletes.length",
];
const STEP_NAMES = [
  "n",
  "ad",
  "m",
  "mn",
  "kp",
  "kd",
  "kn",
  "sg",
  "tr",
  "p",
  "nx",
  "sp",
  "name",
  "payload",
  "next",
  "signalPayload",
  "error",
  "stack",
  "payloadBytes",
  "delayMs",
  "key",
  "result",
];

const REDRIVES: RedriveHistory[] = [
  { step: 1, atMs: 10, replaced: { status: "failed", error: "boom", finalStep: 1, atMs: 9 } },
  { step: 2, atMs: 20, replaced: { status: "cancelled", finalStep: 2, atMs: 19 } },
];
const REDRIVE_PATHS = [
  "0.step",
  "0.replaced.status",
  "0.replaced.error",
  "0.replaced.errorKind",
  "0.replaced.supersededBy",
  "1.replaced.error",
  "1.replaced.errorKind",
  "1.atMs",
];
const REDRIVE_NAMES = ["error", "errorKind", "supersededBy", "replaced", "status"];

const INDEX: IndexEntry = { submittedAtMs: 5, headers: { tenant: "a" }, group: { id: "g", key: "k" }, parent: { runId: "p", step: 1 } };
const INDEX_PATHS = [
  "submittedAtMs",
  "headers.tenant",
  "workflow",
  "kind",
  "group.id",
  "group.tag",
  "input",
  "inputSha256",
  "priority",
  "maxAttempts",
  "parent.runId",
  "parent.parentClose",
  "parent.submission",
  "submission",
  "flow",
];
const INDEX_NAMES = ["workflow", "kind", "tag", "input", "inputSha256", "priority", "maxAttempts", "parentClose", "submission", "flow", "group", "parent"];

const GROUP: GroupManifest = {
  groupId: "g",
  createdAtMs: 3,
  options: { headers: { tenant: "a" }, flow: { rule: "r" } },
  members: [{ key: "m1", input: new Uint8Array([1]) }],
};
const GROUP_PATHS = [
  "groupId",
  "options.headers.tenant",
  "options.priority",
  "options.maxAttemptsPerStep",
  "options.flow.rule",
  "options.flow.concurrencyKey",
  "options.flow.rateKey",
  "members.0.key",
];
const GROUP_NAMES = ["priority", "maxAttemptsPerStep", "concurrencyKey", "rateKey", "flow", "headers"];

const CHILD_END = { runId: "child-1" as RunId, status: "cancelled" as const, finalStep: 2, headers: {} };
const CHILD_END_PATHS = [
  "runId",
  "status",
  "finalStep",
  "result",
  "error",
  "errorKind",
  "publicError",
  "errorCode",
  "supersededBy",
  "resultOmitted",
  "errorOmitted",
  "token",
];
const CHILD_END_NAMES = ["result", "error", "errorKind", "publicError", "errorCode", "supersededBy", "resultOmitted", "errorOmitted", "token"];

describe("history, redrive, index, group and child-end records under a polluted Object.prototype", () => {
  it("a step history entry reads as written", async () => {
    await readsAsWritten(STEP, encodeStepRecord(STEP), (b) => decodeStepRecord(b, "h/2"), STEP_NAMES, STEP_PATHS);
  });

  it("a run's redrives read as written", async () => {
    await readsAsWritten(REDRIVES, encodeRedrives(REDRIVES), (b) => decodeRedrives(b, "r/x"), REDRIVE_NAMES, REDRIVE_PATHS);
  });

  it("a run index entry reads as written", async () => {
    await readsAsWritten(INDEX, encodeIndexEntry(INDEX), (b) => decodeIndexEntry(b, "i/x"), INDEX_NAMES, INDEX_PATHS);
  });

  it("a child run's end reads as written", async () => {
    const bytes = encodeChildEnd(CHILD_END, { token: "t", memoPrefix: "m" });
    await readsAsWritten({ ...CHILD_END, token: "t" }, bytes, (b) => decodeChildEnd(b, "the signal"), CHILD_END_NAMES, CHILD_END_PATHS);
  });

  it("a group manifest reads as written", async () => {
    await readsAsWritten(GROUP, encodeManifest(GROUP), (b) => decodeManifest(b, "g/x"), GROUP_NAMES, GROUP_PATHS);
  });
});
