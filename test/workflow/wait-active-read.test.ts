/**
 * @module A wait's read of an active run learns only that it is active: the
 * run record and step pointer are checked to be records by their headers,
 * not decoded. Bytes that start no record are still a `StoreCorruptedError`
 * naming the key, and every record a writer stores passes the check.
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
