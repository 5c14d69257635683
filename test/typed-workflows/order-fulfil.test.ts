/**
 * Run-time tests of a generated typed workflow (`orders.order.fulfil`, four
 * steps: reserve -> await_payment (signal wait) -> pack -> ship (after a
 * delay)) over a real runtime on a memory store with a mock clock: a signal
 * delivered after a restart, a delayed step, a transient retry, a
 * cancellation across a restart, the timeout path as a typed failure, and
 * validation at every boundary.
 */

import { describe, expect, it } from "vitest";
import {
  InputMismatchError,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  ValidationError,
  WorkflowDispatcher,
  WorkflowRuntime,
  type ObjectStore,
  type RunnerHandle,
} from "taquba";
import { until, useOpenApps } from "../workflow/helpers.js";
import { orders } from "../../generated/index.js";

const HOUR = 3_600_000;
const PICKUP_DELAY_MS = 2 * HOUR;
const headers = { tenant_id: "acme" };

/** What the handler saw, in order: `step#attempt` entries. */
type Journal = string[];

class OrderFulfil implements orders.OrderFulfilHandler {
  constructor(private readonly journal: Journal) {}

  async reserve(input: orders.OrderFulfilInput, ctx: orders.OrderFulfilReserveContext): Promise<orders.OrderFulfilReserveTransition> {
    this.journal.push(`reserve#${ctx.attempt}`);
    if (input.lines.some((l) => l.sku === "SOLD-OUT")) return ctx.fail({ reason: "out_of_stock", detail: "SOLD-OUT" });
    return ctx.next.awaitPayment.onSignal(
      { order_id: input.order_id },
      { order_id: input.order_id, reservation_id: `res-${input.order_id}`, total_cents: input.total_cents },
    );
  }

  async awaitPayment(p: orders.OrderFulfilAwaitPaymentPayload, ctx: orders.OrderFulfilAwaitPaymentContext): Promise<orders.OrderFulfilAwaitPaymentTransition> {
    this.journal.push(`await_payment#${ctx.attempt}:${ctx.signal === null ? "timeout" : ctx.signal.amount_cents}`);
    if (ctx.signal === null) return ctx.fail({ reason: "payment_timeout" });
    if (ctx.signal.amount_cents < p.total_cents) return ctx.fail({ reason: "underpaid", detail: `${ctx.signal.amount_cents} < ${p.total_cents}` });
    return ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: ctx.signal.amount_cents });
  }

  async pack(p: orders.OrderFulfilPackPayload, ctx: orders.OrderFulfilPackContext): Promise<orders.OrderFulfilPackTransition> {
    this.journal.push(`pack#${ctx.attempt}`);
    return ctx.next.ship.after(PICKUP_DELAY_MS, { order_id: p.order_id, parcel_id: `parcel-${p.reservation_id}`, paid_cents: p.paid_cents });
  }

  async ship(p: orders.OrderFulfilShipPayload, ctx: orders.OrderFulfilShipContext): Promise<orders.OrderFulfilShipTransition> {
    this.journal.push(`ship#${ctx.attempt}`);
    // The courier's API is down on the first attempt: a thrown error is a transient step error.
    if (ctx.attempt === 1 && p.order_id.startsWith("flaky")) throw new Error("courier API answered 503");
    if (p.order_id.startsWith("bad-result")) return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents } as unknown as orders.OrderFulfilResult);
    return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: `TRK-${p.parcel_id}` });
  }
}

interface Env {
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle;
  client: ReturnType<typeof orders.client<WorkflowRuntime>>;
}

const { track, stop } = useOpenApps<Env>();

/** Opens (or reopens: a restart) the queue over `store` and starts a runtime whose one runner is the dispatcher. */
async function start(store: ObjectStore, clock: MockClock, journal: Journal): Promise<Env> {
  const queue = await Queue.open(store, "shop", { clock, flushIntervalMs: 1, queueConfigs: { "workflow-steps": { backoff: { baseMs: 1000, maxMs: 1000 } } } });
  const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: new OrderFulfil(journal) }).build();
  const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
    .logger({ error: () => undefined })
    .build();
  const env = { queue, runtime, worker: runtime.spawn(), client: orders.client(runtime) };
  return track(env);
}

const input = (orderId: string, total = 1_000): orders.OrderFulfilInput => ({ order_id: orderId, lines: [{ sku: "BOOK", quantity: 2 }], total_cents: total });

describe("a typed four-step workflow on a real runtime", () => {
  it("waits for a payment across a restart, waits out the pickup delay, retries the courier and succeeds", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const journal: Journal = [];
    let env = await start(store, clock, journal);
    const { runId, newlySubmitted } = await env.client.orderFulfil.submit(input("flaky-1"), { headers, runId: "order-flaky-1" });
    expect(newlySubmitted).toBe(true);
    await until(async () => (await env.runtime.status(runId))?.step === 1, "the run waiting for its payment");
    expect(journal).toEqual(["reserve#1"]);

    // Restart: a new queue over the same store, a new dispatcher and runtime.
    await stop(env);
    env = await start(store, clock, journal);
    expect(await env.client.orderFulfil.status(runId)).toMatchObject({ state: "pending", step: 1 });
    expect(await env.client.orderFulfil.signals.paymentReceived({ order_id: "flaky-1" }, { amount_cents: 1_000, provider_ref: "psp-9" })).toBe("delivered");

    // pack continues to ship after the pickup delay: nothing runs until the clock passes it.
    await until(() => journal.includes("pack#1"), "pack");
    await until(async () => (await env.runtime.status(runId))?.step === 3, "ship scheduled");
    expect(await env.client.orderFulfil.waitTimeout(runId, 0)).toBeNull();
    expect(journal).not.toContain("ship#1");
    clock.advance(PICKUP_DELAY_MS);
    await until(() => journal.includes("ship#1"), "the first courier attempt");
    // The transient failure is retried after the backoff.
    await until(async () => (await env.queue.view().stats("workflow-steps")).scheduled === 1, "the retry scheduled");
    clock.advance(1_000);

    const end = await env.client.orderFulfil.wait(runId);
    expect(end).toEqual({
      status: "succeeded",
      runId,
      finalStep: 3,
      result: { order_id: "flaky-1", paid_cents: 1_000, tracking_number: "TRK-parcel-res-flaky-1" },
    });
    expect(journal).toEqual(["reserve#1", "await_payment#1:1000", "pack#1", "ship#1", "ship#2"]);
    // After another restart the typed end is still readable without waiting.
    await stop(env);
    env = await start(store, clock, journal);
    expect(await env.client.orderFulfil.result(runId)).toEqual(end);
  });

  it("cancels a run waiting for its payment across a restart; a later payment is only buffered", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const journal: Journal = [];
    let env = await start(store, clock, journal);
    const { runId } = await env.client.orderFulfil.submit(input("o-2"), { headers });
    await until(async () => (await env.runtime.status(runId))?.step === 1, "the run waiting for its payment");
    await stop(env);
    env = await start(store, clock, journal);
    // Submission is idempotent on (run id, input) while the run is active.
    expect(await env.client.orderFulfil.submit(input("o-2"), { headers, runId })).toMatchObject({ runId, newlySubmitted: false });
    await expect(env.client.orderFulfil.submit(input("o-2", 5), { headers, runId })).rejects.toBeInstanceOf(InputMismatchError);
    expect(await env.client.orderFulfil.result(runId)).toBeNull();
    expect(await env.client.orderFulfil.cancel(runId)).toBe(true);
    const end = await env.client.orderFulfil.wait(runId);
    expect(end).toMatchObject({ status: "cancelled", runId, finalStep: 1 });
    expect(await env.client.orderFulfil.cancel(runId)).toBe(false);
    expect(await env.client.orderFulfil.signals.paymentReceived({ order_id: "o-2" }, { amount_cents: 1_000 })).toBe("buffered");
    expect(journal).toEqual(["reserve#1"]);
  });

  it("ends with the typed error when the payment wait times out, and on a runner verdict from the entry step", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const journal: Journal = [];
    const env = await start(store, clock, journal);
    const late = await env.client.orderFulfil.submit(input("o-3"), { headers });
    const soldOut = await env.client.orderFulfil.submit({ ...input("o-4"), lines: [{ sku: "SOLD-OUT", quantity: 1 }] }, { headers });
    await until(async () => (await env.runtime.status(late.runId))?.step === 1, "the run waiting for its payment");
    clock.advance(24 * HOUR);
    expect(await env.client.orderFulfil.wait(late.runId)).toMatchObject({
      status: "failed",
      error: { reason: "payment_timeout" },
      errorKind: "runner",
      finalStep: 1,
    });
    expect(await env.client.orderFulfil.wait(soldOut.runId)).toMatchObject({
      status: "failed",
      error: { reason: "out_of_stock", detail: "SOLD-OUT" },
      finalStep: 0,
    });
    expect(journal).toContain("await_payment#1:timeout");
  });

  it("validates at every boundary: input and headers on submit, signals on send, the result on exit", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const env = await start(store, clock, []);
    const c = env.client.orderFulfil;
    await expect(c.submit({ ...input("x"), total_cents: 0 }, { headers, runId: "bad-input" })).rejects.toThrow(/\/total_cents/);
    await expect(c.submit(input("x"), { headers: { tenant_id: "NOT VALID" }, runId: "bad-headers" })).rejects.toBeInstanceOf(ValidationError);
    expect(await env.runtime.status("bad-input")).toBeNull();
    expect(await env.runtime.status("bad-headers")).toBeNull();
    await expect(c.signals.paymentReceived({ order_id: "x" }, { amount_cents: -1 })).rejects.toThrow(/\/amount_cents/);

    // A result that breaks the schema (cast past the compiler) is a permanent step error naming the path.
    const { runId } = await c.submit(input("bad-result-1"), { headers });
    await until(async () => (await env.runtime.status(runId))?.step === 1, "waiting");
    await c.signals.paymentReceived({ order_id: "bad-result-1" }, { amount_cents: 1_000 });
    await until(async () => (await env.runtime.status(runId))?.step === 3, "ship scheduled");
    clock.advance(PICKUP_DELAY_MS);
    const end = await c.wait(runId);
    expect(end).toMatchObject({ status: "failed", errorKind: "permanent", error: undefined });
    expect(end.status === "failed" ? end.message : "").toContain("/tracking_number");
  });
});
