/**
 * @module A wait's read of an active run learns only that it is active: the
 * run record and step pointer are checked to be records by their headers,
 * not decoded. Bytes that start no record are still a `StoreCorruptedError`
 * naming the key, and every record a writer stores passes the check. A
 * field damaged inside a well-formed record ends the wait at its next poll
 * round, which decodes the records, instead of leaving it waiting for ever.
 */
import { pack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StepOutcome, StoreCorruptedError } from "taquba";
import { runKey, stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import {
  checkRunRecordShape,
  checkStepPointerShape,
  decodeRunRecord,
  decodeStepPointer,
  encodeNextStepPointer,
  encodeRunRecord,
  encodeStepPointer,
  type RunRecord,
} from "../../runtime/workflow/records/records.js";
import type { MockClock } from "../../runtime/testing.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const Q = "workflow-steps";

async function waitRefused(key: (q: string, id: string) => string, bytes: Uint8Array, message: RegExp): Promise<void> {
  // No worker: the run stays active, and the wait reads its records as they are.
  const env = await openEnv(
    runnerOf(async () => StepOutcome.succeed(enc("x"))),
    { start: false },
  );
  try {
    await env.runtime.submit({ runId: "r1", input: enc("in") });
    await env.queue.kvPut(key(Q, "r1"), bytes);
    const err = await env.runtime.waitTimeout("r1", 60_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as StoreCorruptedError).objectKey).toBe(key(Q, "r1"));
    expect((err as Error).message).toMatch(message);
  } finally {
    await env.stop();
  }
}

describe("a wait's read of an active run", () => {
  it.each([
    ["not MessagePack", enc("not messagepack")],
    ["empty", new Uint8Array(0)],
    ["a string", pack("a string")],
    ["an array", pack(["a", 1, 2, 3, 4, 5])],
    ["a truncated map16 header", new Uint8Array([0xde, 0x00])],
  ])("refuses a run record that is %s", async (_what, bytes) => {
    await waitRefused(runKey, bytes, /run record is not a map/);
  });

  it("refuses a run record map too small to hold its identity fields", async () => {
    await waitRefused(runKey, pack({ runId: "r1", incarnation: "j" }), /run record lacks its required fields/);
  });

  it("refuses a step pointer that is no map, or lacks its step or job", async () => {
    await waitRefused(stepPointerKey, pack(7), /step pointer is not a map/);
    await waitRefused(stepPointerKey, pack({ step: 0 }), /step pointer lacks its required fields/);
  });

  it("passes every run record and step pointer a writer stores, as the decoders read them", () => {
    const base: RunRecord = { runId: "r", submittedAtMs: 1, inputSha256: "ab", incarnation: "j", headers: {} };
    const many: Record<string, string> = {};
    for (let i = 0; i < 20; i++) many[`h${i}`] = "v";
    const records: RunRecord[] = [
      base,
      { ...base, submission: "j", memoPrefix: "m", priority: 3, maxAttempts: 2, cancelRequested: true, hasChildren: true },
      { ...base, headers: many, group: { id: "g", key: "k" }, parent: { runId: "p", step: 1 } },
    ];
    for (const r of records) {
      const bytes = encodeRunRecord(r);
      expect(decodeRunRecord(bytes, "k")).toMatchObject(r);
      expect(() => checkRunRecordShape(bytes, "k")).not.toThrow();
    }
    // A map16 and a map32 header with the fields the record needs, as another MessagePack writer may store them.
    const map16 = new Uint8Array([0xde, 0x00, 0x05]);
    const map32 = new Uint8Array([0xdf, 0x00, 0x00, 0x00, 0x05]);
    expect(() => checkRunRecordShape(map16, "k")).not.toThrow();
    expect(() => checkRunRecordShape(map32, "k")).not.toThrow();
    for (const p of [
      { step: 0, jobId: "j" },
      { step: 3, jobId: "j", name: "n", signalWait: "s" },
    ]) {
      for (const bytes of [encodeStepPointer(p), encodeNextStepPointer(p)]) {
        expect(decodeStepPointer(bytes, "k")).toEqual(p);
        expect(() => checkStepPointerShape(bytes, "k")).not.toThrow();
      }
    }
  });
});

/** Advances `clock` a poll interval at a time until `p` settles (at most `rounds` rounds); what it settled with. */
async function settledWhileAdvancing<T>(clock: MockClock, p: Promise<T>, rounds: number): Promise<{ value?: T; error?: unknown; settled: boolean }> {
  let out: { value?: T; error?: unknown; settled: boolean } = { settled: false };
  p.then(
    (value) => (out = { value, settled: true }),
    (error: unknown) => (out = { error, settled: true }),
  );
  for (let i = 0; i < rounds && !out.settled; i++) {
    await new Promise((r) => setTimeout(r, 5));
    clock.advance(300);
  }
  for (let i = 0; i < 50 && !out.settled; i++) await new Promise((r) => setTimeout(r, 5));
  return out;
}

describe("a wait on an active run whose record is damaged inside", () => {
  const valid: RunRecord = { runId: "r1", submittedAtMs: 1, inputSha256: "ab", incarnation: "j", headers: {} };
  it.each([
    ["a time that is text", pack({ ...valid, submittedAtMs: "yesterday" })],
    ["headers that are a number", pack({ ...valid, headers: 7 })],
    ["a map of five fields with nothing after its header", new Uint8Array([0x85])],
    ["a record cut short", encodeRunRecord(valid).subarray(0, 12)],
  ])("ends with the damage at its next poll round: %s", async (_what, bytes) => {
    const env = await openEnv(
      runnerOf(async () => StepOutcome.succeed(enc("x"))),
      { start: false },
    );
    try {
      await env.runtime.submit({ runId: "r1", input: enc("in") });
      await env.queue.kvPut(runKey(Q, "r1"), bytes);
      // The status reads the record whole and refuses it: the bytes are damage, not a record in a new form.
      await expect(env.runtime.status("r1")).rejects.toBeInstanceOf(StoreCorruptedError);
      const out = await settledWhileAdvancing(env.clock as MockClock, env.runtime.waitTimeout("r1", 60_000), 8);
      expect(out.settled).toBe(true);
      expect(out.error).toBeInstanceOf(StoreCorruptedError);
      expect((out.error as StoreCorruptedError).objectKey).toBe(runKey(Q, "r1"));
    } finally {
      await env.stop();
    }
  });
});
