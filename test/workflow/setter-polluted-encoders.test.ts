/**
 * @module Workflow records written while `Object.prototype` holds a setter
 * named as each of their fields (a library defined an accessor there). An
 * encoder that builds the stored object by assignment hands each such field
 * to the setter, and the record is stored without it: a step's history
 * without its name or signal, an index entry without its workflow, a child's
 * end without its result. Each record is written under the setters and read
 * back, with the prototype clean, whole; no setter is ever called.
 */
import { describe, expect, it } from "vitest";
import { decodeChildEnd, encodeChildEnd } from "../../runtime/workflow/children/child-end.js";
import { decodeManifest, encodeManifest, type GroupManifest } from "../../runtime/workflow/groups/group-records.js";
import {
  attemptFromQueue,
  decodeRedrives,
  decodeStepRecord,
  encodeRedrives,
  encodeStepRecord,
  errorFieldsOf,
  type StepFacts,
  type StepRecord,
  stepRecordOf,
} from "../../runtime/workflow/runs/history-records.js";
import type { RedriveHistory } from "../../runtime/workflow/runs/run-history.js";
import type { RunId } from "../../runtime/workflow/runs/run-id.js";
import { decodeIndexEntry, encodeIndexEntry, type IndexEntry } from "../../runtime/workflow/runs/run-index.js";
import { decodeScheduleRecord, encodeScheduleRecord, type ScheduleRecord } from "../../runtime/workflow/schedules/schedule-record.js";
import { whileDefined } from "../support/polluted-prototype.js";

/**
 * What `write` returns when run while `Object.prototype` holds, for each of
 * `names`, a setter that counts what it is handed and a getter reading
 * undefined; and how many values the setters took.
 */
async function writtenUnderSetters<T>(names: readonly string[], write: () => T): Promise<{ written: T; taken: number }> {
  let taken = 0;
  let written: T | undefined;
  const setter: PropertyDescriptor = {
    get: () => undefined,
    set: () => {
      taken++;
    },
  };
  await whileDefined(Object.fromEntries(names.map((n) => [n, setter])), async () => {
    written = write();
  });
  return { written: written as T, taken };
}

/** Every own key of `o`, nested objects' and arrays' included, as a plain value `toEqual` compares (it skips unowned fields). */
const plain = (o: unknown): unknown => JSON.parse(JSON.stringify(o, (_k, v) => (v instanceof Uint8Array ? Array.from(v) : v)));

const STEP: StepRecord = {
  step: 7,
  name: "charge",
  payloadBytes: 5,
  attempts: [
    { attempt: 1, startedAtMs: 1, endedAtMs: 2, outcome: "retried", error: "boom", stack: "at x" },
    { attempt: 2, startedAtMs: 3, endedAtMs: 4, outcome: "continued" },
  ],
  attemptsDropped: 3,
  memoKeys: ["a"],
  memoKeysWritten: 1,
  kvPuts: ["k"],
  kvDeletes: ["d"],
  kvEffects: 2,
  signal: { key: "go", result: "delivered", payloadBytes: 2 },
  transition: { kind: "after", delayMs: 10, runAtMs: 12 },
  payload: new Uint8Array([1]),
  next: new Uint8Array([2]),
  signalPayload: new Uint8Array([3]),
};
/** The stored step record's names and the record's own, nested ones included. */
const STEP_NAMES = [
  ...["s", "n", "b", "a", "ad", "m", "mn", "kp", "kd", "kn", "sg", "tr", "p", "nx", "sp"],
  ...["name", "signal", "transition", "payload", "next", "signalPayload", "error", "stack"],
  ...["key", "result", "payloadBytes", "kind", "delayMs", "runAtMs"],
];

describe("workflow records written under a setter on Object.prototype named as each field", () => {
  it("a step history entry is stored with every field", async () => {
    const { written, taken } = await writtenUnderSetters(STEP_NAMES, () => encodeStepRecord(STEP));
    expect(taken).toBe(0);
    expect(plain(decodeStepRecord(written, "h/7"))).toEqual(plain(STEP));
  });

  it("a step's record built from its facts holds every optional field as its own", async () => {
    const facts: StepFacts = {
      step: 7,
      name: "charge",
      payloadBytes: 5,
      earlier: [],
      current: { attempt: 1, startedAtMs: 1, endedAtMs: 2, outcome: "continued" },
      signal: { key: "go", result: "delivered" },
      transition: { kind: "immediate" },
      memoKeys: [],
      kvPuts: [],
      kvDeletes: [],
      payload: new Uint8Array([1]),
      next: new Uint8Array([2]),
      signalPayload: new Uint8Array([3]),
    };
    const { written, taken } = await writtenUnderSetters(STEP_NAMES, () => stepRecordOf(facts));
    expect(taken).toBe(0);
    for (const k of ["name", "signal", "transition", "payload", "next", "signalPayload"]) expect(Object.hasOwn(written, k), k).toBe(true);
    expect(plain(decodeStepRecord(encodeStepRecord(written), "h/7"))).toEqual(plain(written));
  });

  it("an attempt taken from the queue's history and a step's error fields keep their error and stack", async () => {
    const { written, taken } = await writtenUnderSetters(["error", "stack"], () => ({
      attempt: attemptFromQueue({ attempt: 1, claimedAt: 1, recordedAt: 2, outcome: "retried", error: "boom", errorStack: "at x" }),
      expired: attemptFromQueue({ attempt: 2, recordedAt: 3, outcome: "lease_expired" }),
      fields: errorFieldsOf(new Error("boom"), "boom"),
    }));
    expect(taken).toBe(0);
    expect({ ...written.attempt }).toMatchObject({ error: "boom", stack: "at x" });
    expect(Object.hasOwn(written.expired, "error")).toBe(true);
    expect(Object.hasOwn(written.fields, "error") && Object.hasOwn(written.fields, "stack")).toBe(true);
  });

  it("a run's redrives are stored with every field", async () => {
    const redrives: RedriveHistory[] = [
      { step: 1, atMs: 10, replaced: { status: "failed", error: "boom", errorKind: "permanent", finalStep: 1, atMs: 9 } },
      { step: 2, atMs: 20, replaced: { status: "cancelled", supersededBy: "r2" as RunId, finalStep: 2, atMs: 19 } },
    ];
    const names = ["step", "atMs", "replaced", "status", "error", "errorKind", "finalStep", "supersededBy"];
    const { written, taken } = await writtenUnderSetters(names, () => encodeRedrives(redrives));
    expect(taken).toBe(0);
    expect(plain(decodeRedrives(written, "r/x"))).toEqual(plain(redrives));
  });

  it("a run index entry is stored with every field", async () => {
    const entry: IndexEntry = {
      submittedAtMs: 5,
      headers: { tenant: "a" },
      workflow: "billing",
      kind: "job",
      group: { id: "g", key: "k", tag: "t" },
      input: new Uint8Array([1]),
      inputSha256: "00",
      priority: 3,
      maxAttempts: 4,
      parent: { runId: "p", step: 1, parentClose: "abandon", submission: "s1" },
      submission: "s2",
      flow: { rule: "r", concurrencyKey: "c", rateKey: "k" },
    };
    const names = [...["workflow", "kind", "group", "input", "inputSha256", "priority", "maxAttempts", "parent", "submission", "flow"], "tag", "parentClose"];
    const { written, taken } = await writtenUnderSetters(names, () => encodeIndexEntry(entry));
    expect(taken).toBe(0);
    expect(plain(decodeIndexEntry(written, "i/x"))).toEqual(plain(entry));
  });

  it("a group manifest is stored with every option", async () => {
    const manifest: GroupManifest = {
      groupId: "g",
      createdAtMs: 3,
      options: { headers: { tenant: "a" }, priority: 2, maxAttemptsPerStep: 5, flow: { rule: "r", concurrencyKey: "c" } },
      members: [{ key: "m1", input: new Uint8Array([1]) }],
    };
    const { written, taken } = await writtenUnderSetters(["headers", "priority", "maxAttemptsPerStep", "flow"], () => encodeManifest(manifest));
    expect(taken).toBe(0);
    expect(plain(decodeManifest(written, "g/x"))).toEqual(plain(manifest));
  });

  it("a child run's end is stored with its result, error fields and what was cut", async () => {
    const ended = { runId: "child-1" as RunId, status: "failed" as const, finalStep: 2, headers: {}, result: new Uint8Array([9]) };
    const failed = { ...ended, error: "x".repeat(9000), errorKind: "permanent" as const, publicError: "no", errorCode: "E1" };
    const names = ["result", "resultOmitted", "error", "errorKind", "publicError", "errorCode", "errorOmitted"];
    const { written, taken } = await writtenUnderSetters(names, () => encodeChildEnd(failed, { token: "t", memoPrefix: "m" }));
    expect(taken).toBe(0);
    const got = decodeChildEnd(written, "the signal");
    expect({ ...got, error: got.error?.length }).toEqual({
      runId: "child-1",
      status: "failed",
      finalStep: 2,
      result: new Uint8Array([9]),
      error: 8195,
      errorKind: "permanent",
      publicError: "no",
      errorCode: "E1",
      errorOmitted: true,
      token: "t",
      memoPrefix: "m",
    });
  });

  it("a schedule record is stored with every field", async () => {
    const schedule: ScheduleRecord = {
      id: "nightly",
      cron: "0 0 * * *",
      timezone: "UTC",
      input: new Uint8Array([1]),
      headers: { tenant: "a" },
      priority: 2,
      maxAttemptsPerStep: 3,
      flow: { rule: "r" },
      debounce: { key: "d", periodMs: 1000 },
      overlap: "skip",
      catchUp: "none",
      jitterMs: 0,
      definitionSha256: "00",
      paused: false,
      lastTickMs: 5,
      ticked: true,
      lastRunId: null,
      bufferedTickMs: null,
      lastFailure: { tickMs: 4, error: "boom" },
      lastTrigger: { atMs: 3, count: 1 },
    };
    const names = ["priority", "maxAttemptsPerStep", "flow", "debounce", "lastFailure", "lastTrigger", "paused", "lastTickMs", "ticked", "jitterMs"];
    const { written, taken } = await writtenUnderSetters(names, () => encodeScheduleRecord(schedule));
    expect(taken).toBe(0);
    expect(plain(decodeScheduleRecord(written, "s/x"))).toEqual(plain(schedule));
  });
});
