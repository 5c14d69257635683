/**
 * @module `StepOutcome`, `Trigger` and `StepError` constructors and their
 * validation.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, TaqubaError, Trigger, ValidationError } from "taquba";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("StepOutcome and Trigger", () => {
  it("builds tagged unions", () => {
    expect(StepOutcome.continueNow(bytes("p"))).toEqual({ kind: "continue", payload: bytes("p"), when: { kind: "immediate" } });
    expect(StepOutcome.continueAfter(bytes("p"), 500)).toEqual({ kind: "continue", payload: bytes("p"), when: { kind: "after", delayMs: 500 } });
    expect(StepOutcome.continueOnSignal(bytes("p"), "k", 1000)).toEqual({
      kind: "continue",
      payload: bytes("p"),
      when: { kind: "onSignal", correlationKey: "k", timeoutMs: 1000 },
    });
    expect(StepOutcome.succeed(bytes("r"))).toEqual({ kind: "succeed", result: bytes("r") });
    expect(StepOutcome.fail("no")).toEqual({ kind: "fail", reason: "no" });
    expect(StepOutcome.cancel("stop")).toEqual({ kind: "cancel", reason: "stop" });
    expect(StepOutcome.continue(bytes("p"), Trigger.after(3))).toEqual(StepOutcome.continueAfter(bytes("p"), 3));
  });

  it("rejects negative or non-finite durations and empty correlation keys", () => {
    expect(() => Trigger.after(-1)).toThrow(ValidationError);
    expect(() => Trigger.after(Number.NaN)).toThrow(ValidationError);
    expect(() => Trigger.onSignal("k", Infinity)).toThrow(ValidationError);
    expect(() => Trigger.onSignal("", 10)).toThrow(ValidationError);
    expect(() => StepOutcome.continueAfter(bytes("p"), -5)).toThrow(ValidationError);
  });
});

describe("StepError", () => {
  it("carries its kind, code and cause", () => {
    const cause = new Error("timeout");
    const t = StepError.transient(cause);
    expect(t.kind).toBe("transient");
    expect(t.code).toBe("STEP_TRANSIENT");
    expect(t.retryable).toBe(true);
    expect(t.message).toBe("timeout");
    expect(t.cause).toBe(cause);
    const p = StepError.permanent("bad input");
    expect(p.kind).toBe("permanent");
    expect(p.retryable).toBe(false);
    expect(p.message).toBe("bad input");
    expect(p).toBeInstanceOf(StepError);
    expect(p).toBeInstanceOf(TaqubaError);
  });

  it("classifies any other thrown value as transient", () => {
    expect(StepError.kindOf(new Error("x"))).toBe("transient");
    expect(StepError.kindOf("x")).toBe("transient");
    expect(StepError.kindOf(StepError.permanent("x"))).toBe("permanent");
  });
});
