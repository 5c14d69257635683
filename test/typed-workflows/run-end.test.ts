/**
 * @module What a typed client makes of a run's end when the result record
 * is missing or damaged: WorkflowResultUnavailableError for a succeeded run
 * with no result (saying whether its record was removed or is damaged), StoreCorruptedError for a result or typed error that is
 * not JSON, ValidationError for JSON of the wrong shape.
 */
import { describe, expect, it } from "vitest";
import { RunId, StepOutcome, StoreCorruptedError, ValidationError, WorkflowResultUnavailableError, type RunEnd } from "taquba";
import { openEnv, overInline, runnerOf } from "../workflow/helpers.js";
import { typedRunEnd } from "../../runtime/typed/workflow-client.js";
import { runResultPrefix } from "../../runtime/workflow/records/kv-keys.js";
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

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a throw");
}

describe("typed run ends from damaged or missing records", () => {
  it("a succeeded run whose result record is gone is WorkflowResultUnavailableError, naming the run and what happened", () => {
    const err = (() => {
      try {
        typedRunEnd(def, { ...ended("succeeded", { outcome: null }), resultUnavailable: "removed" });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(WorkflowResultUnavailableError);
    expect((err as WorkflowResultUnavailableError).runId).toBe("order-7");
    expect((err as WorkflowResultUnavailableError).reason).toBe("removed");
    expect((err as Error).message).toContain('run "order-7" succeeded');
    expect((err as Error).message).toContain("gone from the memo store");
    // An end that does not say why (a RunEnd built elsewhere) blames nothing it cannot know.
    const unknown = errorOf(() => typedRunEnd(def, ended("succeeded", { outcome: null })));
    expect(unknown).toMatchObject({ reason: "unknown" });
    expect((unknown as Error).message).not.toContain("retention");
  });

  it("over a runtime: a result record removed outside retention, or damaged, is reported as what happened", async () => {
    // A result too large for the terminal record, so each run writes a run result record.
    const env = await openEnv(runnerOf(async () => StepOutcome.succeed(overInline('{"ok":true}'))));
    try {
      for (const id of ["gone", "broken", "kept"]) {
        await env.runtime.submit({ input: enc("x"), runId: id });
        await env.runtime.wait(id);
      }
      // No retention is configured: the record goes only because someone cleared the run's memo.
      await env.runtime.memoStore.clearMemosForRun("gone");
      const gone = await env.runtime.wait("gone");
      expect(gone).toMatchObject({ outcome: null, resultUnavailable: "removed" });
      const removed = errorOf(() => typedRunEnd(def, gone));
      expect(removed).toBeInstanceOf(WorkflowResultUnavailableError);
      expect(removed).toMatchObject({ runId: "gone", reason: "removed" });
      expect((removed as Error).message).toContain("clearMemosForRun");
      // A record that is there but unreadable is damaged, not removed.
      const keys: string[] = [];
      for await (const o of env.store.list(runResultPrefix("workflow-steps-memo", "broken"))) keys.push(o.key);
      expect(keys).toHaveLength(1);
      await env.store.put(keys[0]!, enc("not a record"));
      const broken = await env.runtime.wait("broken");
      expect(broken).toMatchObject({ outcome: null, resultUnavailable: "damaged" });
      expect(errorOf(() => typedRunEnd(def, broken))).toMatchObject({ runId: "broken", reason: "damaged" });
      // A readable end carries no reason.
      expect((await env.runtime.wait("kept")).resultUnavailable).toBeUndefined();
    } finally {
      await env.stop();
    }
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
