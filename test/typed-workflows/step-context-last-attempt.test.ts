/**
 * @module A typed step context's `isLastAttempt` answers as its step does:
 * on the step's last attempt and before it, called on the context or off
 * it, and for a step handed in by hand whose own `isLastAttempt` reads
 * `this`.
 */
import { describe, expect, it } from "vitest";
import { Step, WorkflowDispatcher } from "taquba";
import { encodeStepEnvelope } from "taquba/generated";
import { orders } from "../../generated/index.js";

/** The answers `ctx.isLastAttempt()` gave, on the context and off it, for `step`. */
async function answersFor(step: Step): Promise<boolean[]> {
  const seen: boolean[] = [];
  const d = orders
    .registerWorkflows(WorkflowDispatcher.builder(), {
      orderFulfil: {
        reserve: async (p, ctx) => ctx.next.awaitPayment.onSignal({ order_id: p.order_id }, { order_id: p.order_id, reservation_id: "r", total_cents: 1 }),
        awaitPayment: async (p, ctx) => ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: 1 }),
        pack: async (p, ctx) => ctx.next.ship({ order_id: p.order_id, parcel_id: "p", paid_cents: p.paid_cents }),
        ship: async (p, ctx) => {
          const { isLastAttempt } = ctx;
          seen.push(ctx.isLastAttempt(), isLastAttempt());
          return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: "T" });
        },
      },
    })
    .build();
  expect((await d.runStep(step)).kind).toBe("succeed");
  return seen;
}

const payload = () => encodeStepEnvelope("orders.order.fulfil", "ship", { order_id: "o", parcel_id: "p", paid_cents: 1 });

describe("a typed step context's isLastAttempt", () => {
  it("answers as the step's attempt counts do", async () => {
    expect(await answersFor(Step.detached(payload(), { attempt: 1, maxAttempts: 3 }))).toEqual([false, false]);
    expect(await answersFor(Step.detached(payload(), { attempt: 3, maxAttempts: 3 }))).toEqual([true, true]);
    // A detached step's own answer works off the step too.
    const { isLastAttempt } = Step.detached(payload(), { attempt: 2, maxAttempts: 2 });
    expect(isLastAttempt()).toBe(true);
  });

  it("calls a hand-made step's own isLastAttempt on that step", async () => {
    const base = Step.detached(payload(), { attempt: 2, maxAttempts: 2 });
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
