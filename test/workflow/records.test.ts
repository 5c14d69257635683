/**
 * @module The durable workflow records: round trips, damaged records
 * reported as `StoreCorruptedError`, and the key layout.
 */
import { describe, expect, it } from "vitest";
import { StoreCorruptedError, StepOutcome } from "taquba";
import { encodeValue } from "../../runtime/workflow/records/codec.js";
import {
  decodeOutcomeRecord,
  decodeReplayRecord,
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeOutcomeRecord,
  encodeReplayRecord,
  encodeRunRecord,
  encodeStepPointer,
  encodeTerminalRecord,
  terminationOf,
  type TerminalRecord,
} from "../../runtime/workflow/records/records.js";
import {
  memoEntryKey,
  replayRecordKey,
  runKey,
  runMemoRoot,
  signalDeliveredKey,
  stepDedupKey,
  stepPointerKey,
} from "../../runtime/workflow/records/kv-keys.js";
import type { RunId } from "taquba";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("durable records", () => {
  it("round-trip and omit absent fields", () => {
    const run = { runId: "r", submittedAtMs: 5, inputSha256: "ab", incarnation: "J1", headers: { a: "b" }, priority: undefined };
    const enc = encodeRunRecord(run);
    expect(decodeRunRecord(enc, "k")).toEqual({ runId: "r", submittedAtMs: 5, inputSha256: "ab", incarnation: "J1", headers: { a: "b" } });
    expect(decodeStepPointer(encodeStepPointer({ step: 3, jobId: "J", signalWait: "pay:1" }), "k")).toEqual({ step: 3, jobId: "J", signalWait: "pay:1" });
    const t: TerminalRecord = {
      runId: "r" as RunId,
      status: "failed",
      error: "boom",
      errorKind: "permanent",
      finalStep: 2,
      terminatedAtMs: 9,
      incarnation: "J1",
      token: "J3:1",
    };
    const dt = decodeTerminalRecord(encodeTerminalRecord(t), "k");
    expect(dt).toEqual(t);
    expect(terminationOf(dt)).toEqual({ runId: "r", status: "failed", error: "boom", errorKind: "permanent", finalStep: 2, terminatedAtMs: 9 });
    const o = { token: "t", outcome: { runId: "r" as RunId, status: "succeeded" as const, result: bytes("ok"), headers: {}, finalStep: 0 } };
    expect(decodeOutcomeRecord(encodeOutcomeRecord(o), "k")).toEqual(o);
    const r = {
      storedAtMs: 1,
      outcome: StepOutcome.continueAfter(bytes("p"), 10),
      effects: { puts: [["a", bytes("v")]] as Array<[string, Uint8Array]>, deletes: ["b"] },
    };
    expect(decodeReplayRecord(encodeReplayRecord(r), "k")).toEqual(r);
  });

  it("report damaged records as StoreCorruptedError naming the key", () => {
    expect(() => decodeRunRecord(new Uint8Array([0xc1]), "workflow/runs/x")).toThrow(StoreCorruptedError);
    expect(() => decodeRunRecord(encodeValue({ runId: "r" }), "workflow/runs/x")).toThrow(/workflow\/runs\/x/);
    expect(() => decodeTerminalRecord(encodeValue({ runId: "r", status: "weird", finalStep: 0 }), "k")).toThrow(StoreCorruptedError);
    expect(() => decodeReplayRecord(encodeValue({ storedAtMs: 1, outcome: { kind: "explode" }, effects: { puts: [], deletes: [] } }), "k")).toThrow(
      StoreCorruptedError,
    );
    expect(() => decodeStepPointer(encodeValue([1, 2]), "k")).toThrow(StoreCorruptedError);
  });
});

describe("key layout", () => {
  it("keeps runs apart whose ids share a prefix", () => {
    expect(runKey("q", "a")).toBe("workflow/runs/q/a");
    expect(stepPointerKey("q", "a")).toBe("workflow/steps/q/a");
    expect(signalDeliveredKey("q", "a", 3)).toBe("workflow/signal-delivered/q/a/3");
    expect(stepDedupKey("a", 3)).toBe("run:a:3");
    expect(memoEntryKey("p", "ab", 0, "k").startsWith(runMemoRoot("p", "a"))).toBe(false);
    expect(memoEntryKey("p", "a", 0, "k").startsWith(runMemoRoot("p", "a"))).toBe(true);
    expect(replayRecordKey("p", "a", 1, bytes("x"))).toMatch(/^p\/step-outputs\/a\/1\/[0-9a-f]{64}$/);
  });
});
