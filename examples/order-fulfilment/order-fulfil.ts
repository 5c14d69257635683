/**
 * @module The handlers of workflow `orders.order.fulfil`, one method per
 * step, typed by the generated `orders.OrderFulfilHandler` (first written by
 * `taquba codegen --scaffold`, then filled in).
 *
 * Each method returns a transition built from its context: `ctx.next.<step>`
 * holds only the steps the spec lets it continue to, each taking that step's
 * payload type, so a transition to an undeclared step or with a wrong
 * payload does not compile.
 */

import { orders } from "../../generated/index.js";

/** Knobs of the demo, so a run shows each path quickly. */
export interface OrderFulfilOptions {
  /** How long a run waits for its payment before it fails with `payment_timeout`. */
  readonly paymentWaitMs: number;
  /** How long a packed parcel waits for the courier. */
  readonly pickupDelayMs: number;
  /** Where each step reports what it did. */
  readonly log: (line: string) => void;
}

export class OrderFulfil implements orders.OrderFulfilHandler {
  constructor(private readonly opts: OrderFulfilOptions) {}

  async reserve(order: orders.OrderFulfilInput, ctx: orders.OrderFulfilReserveContext): Promise<orders.OrderFulfilReserveTransition> {
    const missing = order.lines.find((l) => l.sku === "SOLD-OUT");
    if (missing !== undefined) return ctx.fail({ reason: "out_of_stock", detail: `no stock for ${missing.sku}` });
    // The reservation id is memoized, so a retried step reserves once.
    const reservationId = await ctx.memo.memoized("reservation", async () => `res-${order.order_id}`);
    this.opts.log(`${order.order_id}: reserved ${order.lines.length} line(s) as ${reservationId}; waiting for the payment`);
    return ctx.next.awaitPayment.onSignal(
      { order_id: order.order_id },
      { order_id: order.order_id, reservation_id: reservationId, total_cents: order.total_cents },
      { timeoutMs: this.opts.paymentWaitMs },
    );
  }

  async awaitPayment(p: orders.OrderFulfilAwaitPaymentPayload, ctx: orders.OrderFulfilAwaitPaymentContext): Promise<orders.OrderFulfilAwaitPaymentTransition> {
    if (ctx.signal === null) return ctx.fail({ reason: "payment_timeout", detail: `no payment within ${this.opts.paymentWaitMs} ms` });
    const paid = ctx.signal.amount_cents;
    if (paid < p.total_cents) return ctx.fail({ reason: "underpaid", detail: `paid ${paid} of ${p.total_cents} cents` });
    this.opts.log(`${p.order_id}: payment of ${paid} cents received (${ctx.signal.provider_ref ?? "no reference"})`);
    return ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: paid });
  }

  async pack(p: orders.OrderFulfilPackPayload, ctx: orders.OrderFulfilPackContext): Promise<orders.OrderFulfilPackTransition> {
    this.opts.log(`${p.order_id}: packed; the courier collects in ${this.opts.pickupDelayMs} ms`);
    return ctx.next.ship.after(this.opts.pickupDelayMs, { order_id: p.order_id, parcel_id: `parcel-${p.reservation_id}`, paid_cents: p.paid_cents });
  }

  async ship(p: orders.OrderFulfilShipPayload, ctx: orders.OrderFulfilShipContext): Promise<orders.OrderFulfilShipTransition> {
    // The courier's API fails the first call: a thrown error is retried with backoff.
    if (ctx.attempt === 1) {
      this.opts.log(`${p.order_id}: courier API unavailable on attempt 1; retrying`);
      throw new Error("courier API answered 503");
    }
    this.opts.log(`${p.order_id}: handed to the courier on attempt ${ctx.attempt}`);
    return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: `TRK-${p.parcel_id}` });
  }
}
