/**
 * @module A typed step context's `isLastAttempt` answers as its step does:
 * on the step's last attempt and before it, called on the context or off
 * it, and for a step handed in by hand whose own `isLastAttempt` reads
 * `this`.
 */
import { describe, expect, it } from "vitest";
import { Step } from "taquba";
import { shipDispatcher, shipPayload } from "./fixtures/ship-step.js";

/** The answers `ctx.isLastAttempt()` gave, on the context and off it, for `step`. */
async function answersFor(step: Step): Promise<boolean[]> {
  const seen: boolean[] = [];
  const d = shipDispatcher((ctx) => {
    const { isLastAttempt } = ctx;
    seen.push(ctx.isLastAttempt(), isLastAttempt());
  });
  expect((await d.runStep(step)).kind).toBe("succeed");
  return seen;
}

describe("a typed step context's isLastAttempt", () => {
  it("answers as the step's attempt counts do", async () => {
    expect(await answersFor(Step.detached(shipPayload(), { attempt: 1, maxAttempts: 3 }))).toEqual([false, false]);
    expect(await answersFor(Step.detached(shipPayload(), { attempt: 3, maxAttempts: 3 }))).toEqual([true, true]);
    // A detached step's own answer works off the step too.
    const { isLastAttempt } = Step.detached(shipPayload(), { attempt: 2, maxAttempts: 2 });
    expect(isLastAttempt()).toBe(true);
  });

  it("calls a hand-made step's own isLastAttempt on that step", async () => {
    const base = Step.detached(shipPayload(), { attempt: 2, maxAttempts: 2 });
    let calls = 0;
    const handMade: Step = {
      ...base,
      isLastAttempt(this: Step) {
        calls++;
        return this.attempt >= this.maxAttempts;
      },
    };
    expect(await answersFor(handMade)).toEqual([true, true]);
    expect(calls).toBe(2);
  });
});
