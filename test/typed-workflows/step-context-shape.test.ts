/**
 * The typed step context a handler is handed is a plain frozen object:
 * prototype `Object.prototype`, its keys in their order, data fields
 * read-only, `cancelSignal` an enumerable accessor that reads through to
 * the step, printed as a plain object. How the dispatcher builds it
 * (fields assigned in a constructor) must show in none of these.
 */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { Step } from "taquba";
import { shipDispatcher, shipPayload } from "./fixtures/ship-step.js";
import { whileDefined } from "../support/polluted-prototype.js";

const KEYS = [
  "workflow",
  "stepName",
  "step",
  "runId",
  "stepNumber",
  "headers",
  "attempt",
  "maxAttempts",
  "isLastAttempt",
  "cancelSignal",
  "lease",
  "memo",
  "runMemo",
  "effects",
  "kv",
  "signal",
  "jobs",
  "workflows",
  "next",
  "succeed",
  "fail",
  "cancel",
];

/** Runs a typed step and checks the context its handler was handed. */
async function expectPlainContext(): Promise<void> {
  let seen: object | undefined;
  const d = shipDispatcher((ctx) => {
    seen = ctx;
  });
  const ac = new AbortController();
  const step = Step.detached(shipPayload(), { cancelSignal: ac.signal, stepNumber: 3 });
  expect((await d.runStep(step)).kind).toBe("succeed");
  const ctx = seen as Record<string, unknown>;
  expect(Object.getPrototypeOf(ctx)).toBe(Object.prototype);
  expect(ctx.constructor).toBe(Object);
  expect(Object.keys(ctx)).toEqual(KEYS);
  expect(Object.isFrozen(ctx)).toBe(true);
  for (const k of KEYS) {
    const desc = Object.getOwnPropertyDescriptor(ctx, k)!;
    if (k === "cancelSignal") expect(desc).toMatchObject({ enumerable: true, configurable: false });
    else expect(desc, k).toMatchObject({ writable: false, enumerable: true, configurable: false });
  }
  // No slot of its own for the signal's source, hidden or not: it reads through the context's own `step`.
  expect(Reflect.ownKeys(ctx)).toEqual(KEYS);
  expect(inspect(ctx, { depth: 0 }).startsWith("{")).toBe(true);
  expect(ctx.step).toBe(step);
  // Read through a Proxy of the context or an object inheriting from it, the signal is still the step's.
  expect(new Proxy(ctx, {}).cancelSignal).toBe(ac.signal);
  expect((Object.create(ctx) as Record<string, unknown>).cancelSignal).toBe(ac.signal);
  expect({ ...ctx }.cancelSignal).toBe(ac.signal);
  expect(ctx.stepNumber).toBe(3);
  expect(ctx.cancelSignal).toBe(ac.signal);
  expect((ctx.isLastAttempt as () => boolean)()).toBe(false);
}

describe("a typed step context", () => {
  it("is a plain frozen object whose cancelSignal is the step's", expectPlainContext);

  it("is the same, its fields its own, while Object.prototype has setters of their names, handing none to them", async () => {
    const swallowed: unknown[] = [];
    const accessor = { get: () => undefined, set: (v: unknown) => swallowed.push(v) };
    await whileDefined({ stepName: accessor, step: accessor, jobs: accessor, workflows: accessor, succeed: accessor, cancel: accessor }, expectPlainContext);
    expect(swallowed).toEqual([]);
  });
});
