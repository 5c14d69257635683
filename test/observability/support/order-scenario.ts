/**
 * @module The one workflow scenario the tracing and metrics tests observe:
 * the typed `orders.order.fulfil` workflow (reserve, await_payment, pack,
 * ship) worked by two processes in turn, the second opened after the first
 * closed, as a restart or deploy would. Time runs on a MockClock, so a
 * signal wait can time out without sleeping.
 *
 * - order-t1: reserve fails once and is retried, then waits for the
 *   payment signal; the restart happens while it waits; the signal is
 *   delivered after the restart and the run succeeds.
 * - order-t2: the same, but no signal comes: the wait times out after the
 *   restart (one day on the clock) and the run fails by the handler.
 * - order-t3: the same, but cancelled from outside while it waits, after
 *   the restart.
 * - order-bad: reserve fails permanently: dead-lettered, the run fails.
 * Also one duplicate submission of order-t1, and one signal no run waits
 * for (buffered).
 */
import { MemoryStore, MockClock, NoopTerminalHook, type ObjectStore, Queue, StepError, WorkflowDispatcher, WorkflowRuntime } from "taquba";
import { orders } from "../../../generated/index.js";
import { until } from "../../support/until.js";

export const STEP_QUEUE = "workflow-steps";
export const WORKFLOW = "orders.order.fulfil";
/** The payment wait's timeout, from the spec. */
export const PAYMENT_TIMEOUT_MS = 86_400_000;

export function orderHandler(): orders.OrderFulfilHandler {
  return {
    async reserve(p, ctx) {
      if (p.order_id === "bad") throw StepError.permanent(new Error("unknown sku"));
      if (ctx.attempt === 1) throw new Error("stock service unavailable");
      return ctx.next.awaitPayment.onSignal(
        { order_id: p.order_id },
        { order_id: p.order_id, reservation_id: `res-${p.order_id}`, total_cents: p.total_cents },
      );
    },
    async awaitPayment(p, ctx) {
      if (ctx.signal === null) return ctx.fail({ reason: "payment_timeout" });
      return ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: ctx.signal.amount_cents });
    },
    async pack(p, ctx) {
      return ctx.next.ship({ order_id: p.order_id, parcel_id: `parcel-${p.reservation_id}`, paid_cents: p.paid_cents });
    },
    async ship(p, ctx) {
      return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: `TRK-${p.parcel_id}` });
    },
  };
}

/** One process of the shop: its queue, runtime and typed client. */
export async function openShop(store: ObjectStore, clock: MockClock) {
  const queue = await Queue.open(store, "shop", {
    clock,
    flushIntervalMs: 1,
    logger: { error: () => undefined },
    queueConfigs: { [STEP_QUEUE]: { backoff: { baseMs: 0, maxMs: 0 } } },
  });
  const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: orderHandler() }).build();
  const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
    .clock(clock)
    .logger({ error: () => undefined })
    .build();
  return { queue, runtime, client: orders.client(runtime).orderFulfil };
}

const order = (id: string) => ({ order_id: id, lines: [{ sku: "BOOK", quantity: 1 }], total_cents: 900 });
const headers = { tenant_id: "acme" };

export interface ScenarioHooks {
  /** Runs the submissions of the first process, e.g. inside a request's span. */
  submitting?: (submit: () => Promise<void>) => Promise<void>;
  /** Called in the second process once every run ended, before it closes (to collect gauges). */
  beforeClose?: (shop: Awaited<ReturnType<typeof openShop>>) => Promise<void>;
}

/** Runs the scenario of the module documentation; resolves once both processes closed. */
export async function runOrderScenario(hooks: ScenarioHooks = {}): Promise<void> {
  const store = new MemoryStore();
  const clock = new MockClock(1_700_000_000_000);
  const first = await openShop(store, clock);
  const w1 = first.runtime.spawn();
  const submitAll = async () => {
    await first.client.submit(order("t1"), { headers, runId: "order-t1" });
    await first.client.submit(order("t1"), { headers, runId: "order-t1" }); // a duplicate
    await first.client.submit(order("t2"), { headers, runId: "order-t2" });
    await first.client.submit(order("t3"), { headers, runId: "order-t3" });
  };
  await (hooks.submitting ?? ((s) => s()))(submitAll);
  // The runs retried reserve and now wait for their payment: stop this process there.
  await until("three runs waiting for their payment", async () => (await first.queue.view().stats(STEP_QUEUE)).scheduled === 3);
  await w1.shutdown();
  await first.queue.close();

  const second = await openShop(store, clock);
  const w2 = second.runtime.spawn();
  if ((await second.client.signals.paymentReceived({ order_id: "t1" }, { amount_cents: 900 })) !== "delivered")
    throw new Error("t1's signal was not delivered");
  if ((await second.client.signals.paymentReceived({ order_id: "nobody" }, { amount_cents: 1 })) !== "buffered") throw new Error("a signal was not buffered");
  await expectStatus(second.runtime, "order-t1", "succeeded");
  if (!(await second.runtime.cancel("order-t3"))) throw new Error("order-t3 could not be cancelled");
  await expectStatus(second.runtime, "order-t3", "cancelled");
  clock.advance(PAYMENT_TIMEOUT_MS + 1);
  await expectStatus(second.runtime, "order-t2", "failed");
  await second.client.submit(order("bad"), { headers, runId: "order-bad" });
  await expectStatus(second.runtime, "order-bad", "failed");
  await w2.shutdown();
  await hooks.beforeClose?.(second);
  await second.queue.close();
}

async function expectStatus(runtime: WorkflowRuntime, runId: string, status: string): Promise<void> {
  const end = await runtime.wait(runId);
  if (end.termination.status !== status) throw new Error(`run ${runId} ended ${end.termination.status}, expected ${status}`);
}
