/**
 * @module The durable workflow records: round trips, damaged records
 * reported as `StoreCorruptedError`, and the key layout.
 */
import { describe, expect, it } from "vitest";
import { FLOW_CONCURRENCY_KEY_HEADER, FLOW_RULE_HEADER, StoreCorruptedError, StepOutcome } from "taquba";
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
  encodeInlineOutcome,
  encodeTerminalRecord,
  terminationOf,
  type TerminalRecord,
} from "../../runtime/workflow/records/records.js";
import { outcomeOfTerminal } from "../../runtime/workflow/runs/inline-outcome.js";
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
import { decodeIndexEntry, encodeIndexEntry } from "../../runtime/workflow/runs/run-index.js";

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

  it("keep a run's submission and its children's link to it, and report a malformed one", () => {
    const run = {
      runId: "c",
      submittedAtMs: 5,
      inputSha256: "ab",
      incarnation: "J2",
      submission: "J1",
      headers: {},
      parent: { runId: "p", step: 0, submission: "P1" },
    };
    expect(decodeRunRecord(encodeRunRecord(run), "k")).toEqual(run);
    const base = { runId: "c", submittedAtMs: 5, inputSha256: "ab", incarnation: "J2", headers: {} };
    expect(() => decodeRunRecord(encodeValue({ ...base, submission: 7 }), "workflow/runs/c")).toThrow(/workflow\/runs\/c.*submission/);
    expect(() => decodeRunRecord(encodeValue({ ...base, submission: null }), "k")).toThrow(/has a submission of null/);
    expect(() => decodeRunRecord(encodeValue({ ...base, parent: { runId: "p", step: 0, submission: ["P1"] } }), "k")).toThrow(/malformed parent/);
    const t = { runId: "c", status: "succeeded", finalStep: 0, terminatedAtMs: 9, incarnation: "J2", token: "J2:1", submission: "J1" };
    expect(decodeTerminalRecord(encodeTerminalRecord(t as TerminalRecord), "k").submission).toBe("J1");
    expect(() => decodeTerminalRecord(encodeValue({ ...t, submission: 1e30 }), "k")).toThrow(StoreCorruptedError);
    const entry = { submittedAtMs: 5, headers: {}, submission: "J1", parent: { runId: "p", step: 0, submission: "P1" } };
    expect(decodeIndexEntry(encodeIndexEntry(entry), "k")).toEqual(entry);
    expect(() => decodeIndexEntry(encodeValue({ ...entry, submission: null }), "k")).toThrow(StoreCorruptedError);
    expect(() => decodeIndexEntry(encodeValue({ ...entry, parent: { runId: "p", step: 0, submission: 3 } }), "k")).toThrow(StoreCorruptedError);
  });

  it("keep an outcome inline in a terminal record, compactly; records without one read as before, a malformed one is damaged", () => {
    const t = { runId: "r", status: "failed", finalStep: 1, terminatedAtMs: 9, incarnation: "J1", token: "J1:1", error: "boom", errorKind: "runner" };
    const earlier = encodeTerminalRecord(t as TerminalRecord);
    expect(decodeTerminalRecord(earlier, "k")).toEqual(t);
    expect(outcomeOfTerminal(decodeTerminalRecord(earlier, "k"))).toBeNull();
    const inline = { result: bytes("ok"), headers: { tenant: "a" }, publicError: undefined, errorCode: "E1" };
    const withInline = encodeTerminalRecord({ ...(t as TerminalRecord), inline });
    // Absent inline fields are left out, not stored as undefined.
    expect(withInline.byteLength - earlier.byteLength).toBe(encodeInlineOutcome(inline).byteLength + encodeValue("inline").byteLength);
    expect(decodeTerminalRecord(withInline, "k").inline).toEqual({ result: bytes("ok"), headers: { tenant: "a" }, errorCode: "E1" });
    expect(outcomeOfTerminal(decodeTerminalRecord(withInline, "k"))).toEqual({
      runId: "r",
      status: "failed",
      result: bytes("ok"),
      error: "boom",
      errorKind: "runner",
      errorCode: "E1",
      headers: { tenant: "a" },
      finalStep: 1,
    });
    for (const bad of [null, [], { headers: { a: 1 } }, { headers: {}, result: "ok" }, { headers: {}, publicError: 3 }, { result: bytes("ok") }]) {
      expect(() => decodeTerminalRecord(encodeValue({ ...t, inline: bad }), "workflow/outcomes/q/r")).toThrow(
        /workflow\/outcomes\/q\/r.*malformed inline outcome/,
      );
    }
  });

  it("keep a run's flow-control headers in its index entry, and read entries written before they were kept", () => {
    const flow = { [FLOW_RULE_HEADER]: "reports", [FLOW_CONCURRENCY_KEY_HEADER]: "acme" };
    const entry = { submittedAtMs: 5, headers: { tenant: "acme" }, flow };
    expect(decodeIndexEntry(encodeIndexEntry(entry), "k")).toEqual(entry);
    // An entry of an earlier version: no flow field, so a redrive adds no flow headers, as then.
    const earlier = encodeValue({ submittedAtMs: 5, headers: { tenant: "acme" } });
    expect(decodeIndexEntry(earlier, "k")).toEqual({ submittedAtMs: 5, headers: { tenant: "acme" } });
    expect(decodeIndexEntry(encodeIndexEntry({ submittedAtMs: 5, headers: {} }), "k")).not.toHaveProperty("flow");
    expect(() => decodeIndexEntry(encodeValue({ ...entry, flow: { rule: 3 } }), "k")).toThrow(StoreCorruptedError);
    expect(() => decodeIndexEntry(encodeValue({ ...entry, flow: ["reports"] }), "k")).toThrow(StoreCorruptedError);
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
