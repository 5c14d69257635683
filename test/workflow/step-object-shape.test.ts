/**
 * @module The step a runner is handed is a plain frozen object: prototype
 * `Object.prototype`, its keys in their documented order, data fields
 * read-only, `cancelSignal` an enumerable accessor that a spread carries,
 * no symbol keys, printed as a plain object. How the runtime
 * builds it (fields assigned in a constructor) must show in none of these.
 */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { Step, StepOutcome, type Step as StepType } from "taquba";
import { enc, openEnv, runnerOf } from "./helpers.js";
import { whileDefined } from "../support/polluted-prototype.js";

const STEP_KEYS = [
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
  "stepNumber",
  "payload",
  "signal",
];

function expectPlainStep(step: StepType): void {
  expect(Object.getPrototypeOf(step)).toBe(Object.prototype);
  expect(step.constructor).toBe(Object);
  expect(Object.keys(step)).toEqual(STEP_KEYS);
  expect(Object.isFrozen(step)).toBe(true);
  for (const k of STEP_KEYS) {
    const d = Object.getOwnPropertyDescriptor(step, k)!;
    if (k === "cancelSignal") {
      expect(d.get).toBeTypeOf("function");
      expect(d).toMatchObject({ enumerable: true, configurable: false });
    } else {
      expect(d, k).toMatchObject({ writable: false, enumerable: true, configurable: false });
    }
  }
  // Where the signal comes from is kept out of sight: no symbol key, hidden or not.
  expect(Reflect.ownKeys(step)).toEqual(STEP_KEYS);
  const copy = { ...step };
  expect(Object.keys(copy)).toEqual(STEP_KEYS);
  expect(Object.getOwnPropertySymbols(copy)).toHaveLength(0);
  expect(copy.cancelSignal).toBe(step.cancelSignal);
  expect(inspect(step, { depth: 0 }).startsWith("{")).toBe(true);
  expect(() => {
    (step as { stepNumber: number }).stepNumber = 99;
  }).toThrow(TypeError);
}

describe("the step a runner is handed", () => {
  it("is a plain frozen object, from the runtime and from Step.detached", async () => {
    const seen: StepType[] = [];
    const env = await openEnv(
      runnerOf(async (step) => {
        seen.push(step);
        return step.stepNumber === 0 ? StepOutcome.continueNow(enc("next")) : StepOutcome.succeed(enc("done"));
      }),
    );
    try {
      const { runId } = await env.runtime.submit({ input: enc("in"), options: { headers: { tenant: "acme" } } });
      await env.runtime.wait(runId);
    } finally {
      await env.stop();
    }
    expect(seen.map((s) => s.stepNumber)).toEqual([0, 1]);
    for (const s of seen) {
      expectPlainStep(s);
      expect(s.headers).toEqual({ tenant: "acme" });
      expect(s.isLastAttempt()).toBe(false);
    }
    expectPlainStep(Step.detached(enc("in"), { signal: null, stepNumber: 3 }));
  });

  it("holds its own fields while Object.prototype has setters of their names, handing none to them", async () => {
    const swallowed: unknown[] = [];
    const accessor = { get: () => undefined, set: (v: unknown) => swallowed.push(v) };
    const seen: { stepNumber: number; payload: string; headers: Record<string, string>; runId: string; own: boolean }[] = [];
    const env = await openEnv(
      runnerOf(async (step) => {
        const own = ["memo", "stepNumber", "payload", "signal", "lease"].every((k) => Object.hasOwn(step, k));
        seen.push({ stepNumber: step.stepNumber, payload: new TextDecoder().decode(step.payload), headers: { ...step.headers }, runId: step.runId, own });
        return step.stepNumber === 0 ? StepOutcome.continueNow(enc("next")) : StepOutcome.succeed(enc("done"));
      }),
    );
    try {
      await whileDefined({ memo: accessor, stepNumber: accessor, payload: accessor, signal: accessor, lease: accessor }, async () => {
        const { runId } = await env.runtime.submit({ runId: "r1", input: enc("in"), options: { headers: { tenant: "acme" } } });
        await env.runtime.wait(runId);
        expectPlainStep(Step.detached(enc("in"), { signal: null, stepNumber: 3 }));
      });
    } finally {
      await env.stop();
    }
    expect(seen).toEqual([
      { stepNumber: 0, payload: "in", headers: { tenant: "acme" }, runId: "r1", own: true },
      { stepNumber: 1, payload: "next", headers: { tenant: "acme" }, runId: "r1", own: true },
    ]);
    expect(swallowed).toEqual([]);
  });
});
