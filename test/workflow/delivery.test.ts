/**
 * @module `Step.detached` and `Delivery.detached`: steps and deliveries
 * built without a queue, for running a runner outside a runtime.
 */
import { describe, expect, it } from "vitest";
import { Delivery, MemoryStore, RunId, Step, StepOutcome, type StepRunner } from "taquba";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("Delivery.detached and Step.detached", () => {
  it("builds a step with defaults bound to no queue", async () => {
    const step = Step.detached(bytes("in"));
    expect(RunId.isValid(step.runId)).toBe(true);
    expect(step.stepNumber).toBe(0);
    expect(step.payload).toEqual(bytes("in"));
    expect(step.signal).toBeUndefined();
    expect(step.attempt).toBe(1);
    expect(step.isLastAttempt()).toBe(false);
    expect(step.cancelSignal.aborted).toBe(false);
    await step.lease.ensureAtLeast(60_000);
    expect(await step.kv.get("missing")).toBeNull();
  });

  it("honours its options and runs a runner end to end", async () => {
    const store = new MemoryStore();
    const ac = new AbortController();
    const step = Step.detached(bytes("in"), {
      runId: "r-1",
      stepNumber: 4,
      attempt: 3,
      maxAttempts: 3,
      headers: { tenant: "acme" },
      signal: null,
      cancelSignal: ac.signal,
      store,
      kv: { "app/a": bytes("A") },
    });
    expect(step.isLastAttempt()).toBe(true);
    expect(step.signal).toBeNull();
    expect(step.headers).toEqual({ tenant: "acme" });
    expect(await step.kv.get("app/a")).toEqual(bytes("A"));
    const runner: StepRunner = {
      async runStep(s) {
        const n = await s.memo.memoized("n", async () => 41);
        s.effects.put("app/out", bytes(String(n + 1)));
        return StepOutcome.succeed(bytes(String(n + 1)));
      },
    };
    expect(await runner.runStep(step)).toEqual(StepOutcome.succeed(bytes("42")));
    expect(step.effects.staged().puts).toEqual([["app/out", bytes("42")]]);
    expect(step.memo.scope).toBe(4);
    expect(store.size).toBe(1);
    ac.abort();
    expect(step.cancelSignal.aborted).toBe(true);
  });

  it("gives steps and deliveries the same frozen fields, in the same order", () => {
    const deliveryKeys = [
      "runId",
      "headers",
      "jobId",
      "attempt",
      "maxAttempts",
      "cancelSignal",
      "lease",
      "memo",
      "runMemo",
      "effects",
      "kv",
      "children",
      "isLastAttempt",
    ];
    const step = Step.detached(bytes("in"), { stepNumber: 2, signal: bytes("s") });
    expect(Object.keys(step)).toEqual([...deliveryKeys, "stepNumber", "payload", "signal"]);
    expect(Object.isFrozen(step)).toBe(true);
    expect({ ...step }.signal).toEqual(bytes("s"));
    const d = Delivery.detached({ attempt: 2, maxAttempts: 2 });
    expect(Object.keys(d)).toEqual(deliveryKeys);
    expect(Object.isFrozen(d)).toBe(true);
    expect(d.isLastAttempt()).toBe(true);
  });

  it("builds a bare delivery", () => {
    const d = Delivery.detached({ runId: "r-2", jobId: "j-1" });
    expect(d.runId).toBe("r-2");
    expect(d.jobId).toBe("j-1");
    expect(() => Delivery.detached({ runId: "bad id" })).toThrow();
  });
});
