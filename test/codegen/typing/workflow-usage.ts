/**
 * Type-level contract of generated workflow code, checked by `npm run
 * typecheck` and by workflow-types.test.ts: correct use compiles, and every
 * line after a `@ts-expect-error` is misuse that must not compile.
 */

import { WorkflowDispatcher, type JobSubmitter, type WorkflowHost, type WorkflowRunEnd } from "taquba";
import { orders } from "../../../generated/index.js";

declare const runtime: WorkflowHost;
declare const runner: JobSubmitter;
declare const reserveCtx: orders.OrderFulfilReserveContext;
declare const awaitCtx: orders.OrderFulfilAwaitPaymentContext;
declare const packCtx: orders.OrderFulfilPackContext;
declare const shipCtx: orders.OrderFulfilShipContext;

const headers = { tenant_id: "acme" };
const input: orders.OrderFulfilInput = { order_id: "o-1", lines: [{ sku: "A", quantity: 1 }], total_cents: 500 };
const awaiting: orders.OrderFulfilAwaitPaymentPayload = { order_id: "o-1", reservation_id: "r-1", total_cents: 500 };
const packing: orders.OrderFulfilPackPayload = { order_id: "o-1", reservation_id: "r-1", paid_cents: 500 };

class OrderFulfil implements orders.OrderFulfilHandler {
  async reserve(payload: orders.OrderFulfilInput, ctx: orders.OrderFulfilReserveContext): Promise<orders.OrderFulfilReserveTransition> {
    if (payload.lines.length > 10) return ctx.fail({ reason: "out_of_stock", detail: "too many lines" });
    return ctx.next.awaitPayment.onSignal(
      { order_id: payload.order_id },
      { order_id: payload.order_id, reservation_id: "r", total_cents: payload.total_cents },
    );
  }
  async awaitPayment(
    payload: orders.OrderFulfilAwaitPaymentPayload,
    ctx: orders.OrderFulfilAwaitPaymentContext,
  ): Promise<orders.OrderFulfilAwaitPaymentTransition> {
    const paid = ctx.signal;
    if (paid === null) return ctx.fail({ reason: "payment_timeout" });
    const cents: number = paid.amount_cents;
    return ctx.next.pack({ order_id: payload.order_id, reservation_id: payload.reservation_id, paid_cents: cents });
  }
  async pack(payload: orders.OrderFulfilPackPayload, ctx: orders.OrderFulfilPackContext): Promise<orders.OrderFulfilPackTransition> {
    const tenant: string = ctx.headers.tenant_id;
    return ctx.next.ship.after(60_000, { order_id: payload.order_id, parcel_id: tenant, paid_cents: payload.paid_cents });
  }
  async ship(payload: orders.OrderFulfilShipPayload, ctx: orders.OrderFulfilShipContext): Promise<orders.OrderFulfilShipTransition> {
    if (ctx.cancelSignal.aborted) return ctx.cancel("stopped");
    return ctx.succeed({ order_id: payload.order_id, paid_cents: payload.paid_cents, tracking_number: "T" });
  }
}

export async function correctUse(): Promise<number> {
  const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: new OrderFulfil() }).build();
  const client = orders.client(runtime).orderFulfil;
  const { runId } = await client.submit(input, { headers, runId: "order-o-1" });
  await client.signals.paymentReceived({ order_id: "o-1" }, { amount_cents: 500 });
  await orders.client(runtime).signals.paymentReceived({ order_id: "o-1" }, { amount_cents: 500, provider_ref: "p" });
  const end: WorkflowRunEnd<orders.OrderFulfilResult, orders.OrderFulfilError> = await client.wait(runId);
  if (end.status === "succeeded") return end.result.paid_cents + dispatcher.workflows.length;
  if (end.status === "failed" && end.error !== undefined) return end.error.reason.length;
  return (await client.cancel(runId)) ? 1 : 0;
}

export async function misuse(): Promise<void> {
  const client = orders.client(runtime).orderFulfil;
  // @ts-expect-error: an input field of the wrong type
  await client.submit({ ...input, total_cents: "500" }, { headers });
  // @ts-expect-error: the package declares a required header
  await client.submit(input, {});
  // @ts-expect-error: a wrong signal payload on the workflow's signal sender
  await client.signals.paymentReceived({ order_id: "o-1" }, { amount: 500 });
  // @ts-expect-error: a wrong signal key parameter
  await client.signals.paymentReceived({ order: "o-1" }, { amount_cents: 500 });
  // @ts-expect-error: a job runner cannot run workflows
  void orders.client(runner).orderFulfil;
  const end = await client.wait("r");
  // @ts-expect-error: the result is only there when the run succeeded
  void end.result;
  if (end.status === "succeeded") {
    // @ts-expect-error: the result has no such field
    void end.result.total;
  }

  // @ts-expect-error: reserve may only continue to await_payment
  void reserveCtx.next.pack(packing);
  // @ts-expect-error: ship ends the run, it continues nowhere
  void shipCtx.next.pack(packing);
  // @ts-expect-error: await_payment waits for a signal, so it cannot be entered at once
  void reserveCtx.next.awaitPayment(awaiting);
  // @ts-expect-error: the payload of await_payment lacks reservation_id
  void reserveCtx.next.awaitPayment.onSignal({ order_id: "o-1" }, { order_id: "o-1", total_cents: 5 });
  // @ts-expect-error: the signal key parameters of payment_received are wrong
  void reserveCtx.next.awaitPayment.onSignal({ id: "o-1" }, awaiting);
  // @ts-expect-error: the payload of pack has the wrong type
  void awaitCtx.next.pack({ ...packing, paid_cents: "500" });
  // @ts-expect-error: the delay comes first, then the payload
  void packCtx.next.ship.after({ order_id: "o-1", parcel_id: "p", paid_cents: 1 }, 60_000);
  // @ts-expect-error: the result has the wrong shape
  void shipCtx.succeed({ order_id: "o-1" });
  // @ts-expect-error: the typed error's reason is not one the spec allows
  void shipCtx.fail({ reason: "lost" });
  // @ts-expect-error: the signal payload may be null (timeout), so it must be checked first
  void awaitCtx.signal.amount_cents;
  // @ts-expect-error: the signal payload has no such field
  if (awaitCtx.signal !== null) void awaitCtx.signal.amount;
  // @ts-expect-error: steps that wait for nothing have no signal
  void reserveCtx.signal.amount_cents;

  const wrongStep: orders.OrderFulfilHandler = {
    async reserve(p, ctx) {
      return ctx.next.awaitPayment.onSignal({ order_id: p.order_id }, { order_id: p.order_id, reservation_id: "r", total_cents: 1 });
    },
    async awaitPayment(p, ctx) {
      return ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: 1 });
    },
    // @ts-expect-error: a transition of another step (reserve -> await_payment) is not one pack may return
    async pack() {
      return reserveCtx.next.awaitPayment.onSignal({ order_id: "o" }, awaiting);
    },
    async ship(_p, ctx) {
      return ctx.succeed({ order_id: "o", paid_cents: 1, tracking_number: "t" });
    },
  };
  void wrongStep;

  // @ts-expect-error: a handler must implement every step
  const missing: orders.OrderFulfilHandler = { reserve: new OrderFulfil().reserve, awaitPayment: new OrderFulfil().awaitPayment, pack: new OrderFulfil().pack };
  void missing;
  // @ts-expect-error: registerWorkflows needs a handler for every workflow of the package
  orders.registerWorkflows(WorkflowDispatcher.builder(), {});
}
