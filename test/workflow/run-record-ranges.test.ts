/**
 * @module A run's stored records holding a number outside its range: the
 * run record's submission time, step priority and attempt limit; the step
 * pointer's step; the terminal record's end time, final step and
 * submission time; a run index entry's time, priority, attempt limit and
 * parent step; a group member's end time; a group manifest's time and step
 * options; a signal wait's step. No writer makes one (the same checks
 * refuse it on submission), so each is a `StoreCorruptedError` naming the
 * record's key (which names the run) and the field, never an answer that
 * shows it. Before, only NaN and infinite values were refused: `inspectRun`
 * and `status` answered an active run with a step priority of -1, a step
 * pointer at step -1, an ended run with a final step of -1 or 0.5 or an end
 * time of -5.
 */
import { pack, unpack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StepOutcome, StoreCorruptedError } from "taquba";
import { runKey, stepPointerKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import {
  decodeGroupMember,
  decodeRunRecord,
  decodeSignalWait,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeGroupMember,
  encodeRunRecord,
  encodeSignalWait,
  encodeStepPointer,
  encodeTerminalRecord,
  type RunRecord,
  type TerminalRecord,
} from "../../runtime/workflow/records/records.js";
import { decodeIndexEntry, encodeIndexEntry, type IndexEntry } from "../../runtime/workflow/runs/run-index.js";
import { decodeManifest, encodeManifest, type GroupManifest } from "../../runtime/workflow/groups/group-records.js";
import { checkRunOptions } from "../../runtime/workflow/runs/submit.js";
import type { RunId } from "../../runtime/workflow/runs/run-id.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const Q = "workflow-steps";
const T0 = 1_700_000_000_000;
const NO_TIME = [Number.NaN, Number.POSITIVE_INFINITY, -1, 1e300, 2 ** 53];
const NO_STEP = [Number.NaN, -1, 1.5, 2 ** 53, Number.POSITIVE_INFINITY];
const NO_PRIORITY = [Number.NaN, -1, 1.5, 2 ** 32];
const NO_LIMIT = [Number.NaN, 0, -1, 1.5, 2 ** 53];

type Decode = (bytes: Uint8Array, key: string) => unknown;

/** That `decode` refuses `record` with `field` set to each of `values` as a `StoreCorruptedError` naming the key (and `says`), and reads it at each of `good`. */
function checkRange(decode: Decode, record: Record<string, unknown>, path: string[], values: number[], good: number[], says: RegExp): void {
  const withValue = (v: number) => {
    const copy = structuredClone(record);
    let at = copy;
    for (const p of path.slice(0, -1)) at = at[p] as Record<string, unknown>;
    at[path.at(-1)!] = v;
    return new Uint8Array(pack(copy));
  };
  for (const v of values) {
    let err: unknown;
    try {
      decode(withValue(v), "the-key");
    } catch (e) {
      err = e;
    }
    expect(err, `${path.join(".")} = ${v}`).toBeInstanceOf(StoreCorruptedError);
    expect((err as StoreCorruptedError).objectKey).toBe("the-key");
    expect((err as Error).message, `${path.join(".")} = ${v}`).toMatch(says);
  }
  for (const v of good) expect(() => decode(withValue(v), "the-key"), `${path.join(".")} = ${v}`).not.toThrow();
}

const RUN: RunRecord = {
  runId: "r1",
  submittedAtMs: T0,
  inputSha256: "ab",
  incarnation: "j",
  headers: {},
  priority: 3,
  maxAttempts: 2,
  parent: { runId: "p", step: 1 },
};
const TERMINAL: TerminalRecord = {
  runId: "r1" as RunId,
  status: "succeeded",
  finalStep: 2,
  terminatedAtMs: T0,
  incarnation: "j",
  token: "t",
  submittedAtMs: T0,
};
const INDEX: IndexEntry = { submittedAtMs: T0, headers: {}, priority: 1, maxAttempts: 3, parent: { runId: "p", step: 0 } } as IndexEntry;
const MANIFEST = {
  groupId: "g",
  createdAtMs: T0,
  options: { headers: {}, priority: 2, maxAttemptsPerStep: 4 },
  members: [{ key: "a", input: new Uint8Array([1]) }],
};

describe("run records holding a number outside its range", () => {
  it("the run record: submission time, step priority, attempt limit, parent step", () => {
    const rec = unpack(encodeRunRecord(RUN)) as Record<string, unknown>;
    checkRange(decodeRunRecord, rec, ["submittedAtMs"], NO_TIME, [0, 0.5, T0], /run record has a submission time of .*, not a time in ms/);
    checkRange(
      decodeRunRecord,
      rec,
      ["priority"],
      NO_PRIORITY,
      [0, 2 ** 32 - 1],
      /run record has a step priority of .*, not a whole number from 0 to 4294967295/,
    );
    checkRange(
      decodeRunRecord,
      rec,
      ["maxAttempts"],
      NO_LIMIT,
      [1, Number.MAX_SAFE_INTEGER],
      /run record has a step attempt limit of .*, not a whole number from 1 up/,
    );
    checkRange(decodeRunRecord, rec, ["parent", "step"], NO_STEP, [0, 7], /run record has a malformed parent/);
  });

  it("the step pointer's step", () => {
    const rec = unpack(encodeStepPointer({ step: 3, jobId: "j" })) as Record<string, unknown>;
    checkRange(decodeStepPointer, rec, ["step"], NO_STEP, [0, 3], /step pointer holds step .*, not a step index/);
  });

  it("the terminal record: final step, end time, submission time", () => {
    const rec = unpack(encodeTerminalRecord(TERMINAL)) as Record<string, unknown>;
    checkRange(decodeTerminalRecord, rec, ["finalStep"], NO_STEP, [0, 2], /terminal record has a final step of .*, not a step index/);
    checkRange(decodeTerminalRecord, rec, ["terminatedAtMs"], NO_TIME, [0, T0 + 0.5], /terminal record has an end time of .*, not a time in ms/);
    checkRange(decodeTerminalRecord, rec, ["submittedAtMs"], NO_TIME, [0, T0], /terminal record has a submission time of .*, not a time in ms/);
  });

  it("a run index entry: submission time, priority, attempt limit, parent step", () => {
    const rec = unpack(encodeIndexEntry(INDEX)) as Record<string, unknown>;
    for (const [field, bad, good] of [
      [["submittedAtMs"], NO_TIME, [0, T0]],
      [["priority"], NO_PRIORITY, [0, 2 ** 32 - 1]],
      [["maxAttempts"], NO_LIMIT, [1, 9]],
      [["parent", "step"], NO_STEP, [0, 4]],
    ] as const) {
      checkRange(decodeIndexEntry, rec, [...field], [...bad], [...good], /run index entry .* outside its range/);
    }
  });

  it("a group member's end time, a group manifest's time and step options", () => {
    const member = unpack(encodeGroupMember({ key: "a", runId: "r1", incarnation: "j", state: "succeeded", terminatedAtMs: T0 })) as Record<string, unknown>;
    checkRange(decodeGroupMember, member, ["terminatedAtMs"], NO_TIME, [0, T0], /group member record has an end time of .*, not a time in ms/);
    const manifest = unpack(encodeManifest(MANIFEST as unknown as GroupManifest)) as Record<string, unknown>;
    const says = /group manifest .* outside its range/;
    checkRange(decodeManifest, manifest, ["createdAtMs"], NO_TIME, [0, T0], says);
    checkRange(decodeManifest, manifest, ["options", "priority"], NO_PRIORITY, [0, 5], says);
    checkRange(decodeManifest, manifest, ["options", "maxAttemptsPerStep"], NO_LIMIT, [1, 5], says);
  });

  it("a signal wait's step", () => {
    const rec = unpack(encodeSignalWait({ jobId: "j", runId: "r1", step: 2 })) as Record<string, unknown>;
    checkRange(decodeSignalWait, rec, ["step"], NO_STEP, [0, 2], /signal wait record lacks its job, run or step/);
  });

  it("a submission's attempt limit is refused by the same check", () => {
    for (const v of NO_LIMIT) expect(() => checkRunOptions({ maxAttemptsPerStep: v }), String(v)).toThrow(/maxAttemptsPerStep must be an integer from 1/);
    expect(() => checkRunOptions({ maxAttemptsPerStep: 1 })).not.toThrow();
  });
});

/** `key`'s stored record with `change` applied, written back through the queue's KV. */
async function damage(env: Awaited<ReturnType<typeof openEnv>>, key: string, change: Record<string, unknown>): Promise<void> {
  const bytes = await env.queue.kvGet(key);
  expect(bytes, key).not.toBeNull();
  await env.queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
}

/** What `read` rejects with, or undefined when it resolves. */
async function refusal(read: Promise<unknown>): Promise<unknown> {
  return read.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe("a run whose records hold a number outside its range, read through the runtime", () => {
  it.each([
    ["a NaN submission time", { submittedAtMs: Number.NaN }, /submission time of NaN/],
    ["a negative step priority", { priority: -1 }, /step priority of -1/],
    ["a step attempt limit of 0", { maxAttempts: 0 }, /step attempt limit of 0/],
  ])("an active run's record with %s is a StoreCorruptedError naming the run's record", async (_what, change, says) => {
    const env = await openEnv(
      runnerOf(async () => StepOutcome.succeed(enc("x"))),
      { start: false },
    );
    try {
      await env.runtime.submit({ runId: "r1", input: enc("in") });
      await damage(env, runKey(Q, "r1"), change);
      // (A wait reads an active run's records by their shape until its next poll round: see wait-active-read.test.ts.)
      for (const read of [() => env.runtime.inspectRun("r1"), () => env.runtime.status("r1"), () => env.runtime.cancel("r1")]) {
        const err = await refusal(read());
        expect(err).toBeInstanceOf(StoreCorruptedError);
        expect((err as StoreCorruptedError).objectKey).toBe(runKey(Q, "r1"));
        expect((err as Error).message).toMatch(says);
      }
    } finally {
      await env.stop();
    }
  });

  it("an active run's step pointer at step -1 is a StoreCorruptedError naming it", async () => {
    const env = await openEnv(
      runnerOf(async () => StepOutcome.succeed(enc("x"))),
      { start: false },
    );
    try {
      await env.runtime.submit({ runId: "r1", input: enc("in") });
      await damage(env, stepPointerKey(Q, "r1"), { step: -1 });
      for (const read of [() => env.runtime.inspectRun("r1"), () => env.runtime.status("r1")]) {
        const err = await refusal(read());
        expect(err).toBeInstanceOf(StoreCorruptedError);
        expect((err as StoreCorruptedError).objectKey).toBe(stepPointerKey(Q, "r1"));
        expect((err as Error).message).toMatch(/holds step -1, not a step index/);
      }
    } finally {
      await env.stop();
    }
  });

  it.each([
    ["a final step of -1", { finalStep: -1 }, /final step of -1/],
    ["a fractional final step", { finalStep: 0.5 }, /final step of 0.5/],
    ["a NaN end time", { terminatedAtMs: Number.NaN }, /end time of NaN/],
    ["a negative end time", { terminatedAtMs: -5 }, /end time of -5/],
  ])("an ended run's terminal record with %s is a StoreCorruptedError naming it", async (_what, change, says) => {
    const env = await openEnv(runnerOf(async () => StepOutcome.succeed(enc("x"))));
    try {
      await env.runtime.submit({ runId: "r1", input: enc("in") });
      expect((await env.runtime.wait("r1")).termination.status).toBe("succeeded");
      await damage(env, terminalRecordKey(Q, "r1"), change);
      for (const read of [() => env.runtime.inspectRun("r1"), () => env.runtime.waitTimeout("r1", 60_000), () => env.runtime.status("r1")]) {
        const err = await refusal(read());
        expect(err).toBeInstanceOf(StoreCorruptedError);
        expect((err as StoreCorruptedError).objectKey).toBe(terminalRecordKey(Q, "r1"));
        expect((err as Error).message).toMatch(says);
      }
    } finally {
      await env.stop();
    }
  });
});
