/**
 * @module What a typed client makes of a run's end when the result record
 * is missing or damaged: WorkflowResultUnavailableError for a succeeded run
 * with no result, StoreCorruptedError for a result or typed error that is
 * not JSON, ValidationError for JSON of the wrong shape.
 */
import { describe, expect, it } from "vitest";
import { RunId, StoreCorruptedError, ValidationError, WorkflowResultUnavailableError, type RunEnd } from "taquba";
import { typedRunEnd } from "../../runtime/typed/workflow-client.js";
import { orders } from "../../generated/index.js";

const def = orders.orderFulfilWorkflow;
const enc = (s: string) => new TextEncoder().encode(s);
const runId = RunId.parse("order-7");

function ended(status: "succeeded" | "failed", over: { result?: Uint8Array; error?: string; outcome?: null } = {}): RunEnd {
  const termination = { runId, status, finalStep: 3, terminatedAtMs: 1, ...(status === "failed" ? { errorKind: "runner" as const, error: over.error } : {}) };
  const outcome =
    over.outcome === null
      ? null
      : {
          runId,
          status,
          headers: {},
          finalStep: 3,
          ...(over.result === undefined ? {} : { result: over.result }),
          ...(over.error === undefined ? {} : { error: over.error }),
        };
  return { termination, outcome } as RunEnd;
}

describe("typed run ends from damaged or missing records", () => {
  it("a succeeded run whose result record is gone is WorkflowResultUnavailableError, naming the run", () => {
    const err = (() => {
      try {
        typedRunEnd(def, ended("succeeded", { outcome: null }));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(WorkflowResultUnavailableError);
    expect((err as WorkflowResultUnavailableError).runId).toBe("order-7");
    expect((err as Error).message).toContain('run "order-7" succeeded');
    expect((err as Error).message).toContain("retention");
  });

  it("a result that is not JSON is StoreCorruptedError; JSON of the wrong shape is ValidationError", () => {
    expect(() => typedRunEnd(def, ended("succeeded", { result: enc("{not json") }))).toThrow(StoreCorruptedError);
    expect(() => typedRunEnd(def, ended("succeeded", { result: enc("{not json") }))).toThrow(/the result of run "order-7" is not JSON/);
    expect(() => typedRunEnd(def, ended("succeeded", { result: enc('{"unexpected":true}') }))).toThrow(ValidationError);
  });

  it("a typed error that is not JSON is StoreCorruptedError", () => {
    expect(() => typedRunEnd(def, ended("failed", { error: "<html>" }))).toThrow(StoreCorruptedError);
    expect(() => typedRunEnd(def, ended("failed", { error: "<html>" }))).toThrow(/the typed error of run "order-7" is not JSON/);
  });

  it("a run a debounce superseded is a cancelled end naming the run that replaced it", () => {
    const termination = {
      runId,
      status: "cancelled" as const,
      errorKind: "superseded" as const,
      error: "superseded by run order-8",
      supersededBy: RunId.parse("order-8"),
      finalStep: 0,
      terminatedAtMs: 1,
    };
    expect(typedRunEnd(def, { termination, outcome: null })).toEqual({
      status: "cancelled",
      runId,
      finalStep: 0,
      reason: "superseded by run order-8",
      supersededBy: "order-8",
    });
  });
});
