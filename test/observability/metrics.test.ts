/**
 * @module Metrics through the OpenTelemetry SDK's meter provider and a
 * pull reader: a four-step order (the first step retried once, the second
 * waiting for a signal) worked across a restart moves each documented
 * counter by the right amount and records one step duration per attempt.
 */
import { metrics } from "@opentelemetry/api";
import { type DataPoint, type Histogram, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStore, type ObjectStore, NoopTerminalHook, Queue, StepError, WorkflowDispatcher, WorkflowRuntime } from "taquba";
import { orders } from "../../generated/index.js";

class PullReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

const reader = new PullReader();

beforeAll(() => {
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
});

afterAll(() => {
  metrics.disable();
});

/** Every data point of `name`, keyed by its `taquba.outcome` attribute (or "" without one). */
async function points(name: string): Promise<Map<string, DataPoint<number | Histogram>>> {
  const { resourceMetrics } = await reader.collect();
  const out = new Map<string, DataPoint<number | Histogram>>();
  for (const sm of resourceMetrics.scopeMetrics) {
    for (const m of sm.metrics) {
      if (m.descriptor.name !== name) continue;
      for (const p of m.dataPoints as DataPoint<number | Histogram>[]) out.set(String(p.attributes["taquba.outcome"] ?? ""), p);
    }
  }
  return out;
}

async function value(name: string, outcome = ""): Promise<number> {
  const p = (await points(name)).get(outcome);
  return p === undefined ? 0 : (p.value as number);
}

function handler(): orders.OrderFulfilHandler {
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

async function open(store: ObjectStore) {
  const queue = await Queue.open(store, "shop", {
    flushIntervalMs: 1,
    logger: { error: () => undefined },
    queueConfigs: { "workflow-steps": { backoff: { baseMs: 0, maxMs: 0 } } },
  });
  const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: handler() }).build();
  const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
    .logger({ error: () => undefined })
    .build();
  return { queue, runtime, client: orders.client(runtime).orderFulfil };
}

describe("metrics", () => {
  it("count runs, step attempts by outcome, retries, signals and dead letters across a restart", async () => {
    const before = {
      submitted: await value("taquba.run.submitted"),
      succeeded: await value("taquba.run.terminated", "succeeded"),
      completed: await value("taquba.step.attempts", "completed"),
      retried: await value("taquba.step.attempts", "retried"),
    };
    expect(before).toEqual({ submitted: 0, succeeded: 0, completed: 0, retried: 0 });
    const store = new MemoryStore();
    const first = await open(store);
    const w1 = first.runtime.spawn();
    await first.client.submit(
      { order_id: "m1", lines: [{ sku: "BOOK", quantity: 1 }], total_cents: 900 },
      { headers: { tenant_id: "acme" }, runId: "order-m1" },
    );
    // A duplicate submission is not counted.
    await first.client.submit(
      { order_id: "m1", lines: [{ sku: "BOOK", quantity: 1 }], total_cents: 900 },
      { headers: { tenant_id: "acme" }, runId: "order-m1" },
    );
    for (let i = 0; i < 200 && (await value("taquba.step.attempts", "completed")) < 1; i++) await new Promise((r) => setImmediate(r));
    await w1.shutdown();
    await first.queue.close();

    const second = await open(store);
    const w2 = second.runtime.spawn();
    expect(await second.client.signals.paymentReceived({ order_id: "m1" }, { amount_cents: 900 })).toBe("delivered");
    expect(await second.client.signals.paymentReceived({ order_id: "nobody" }, { amount_cents: 1 })).toBe("buffered");
    expect((await second.runtime.wait("order-m1")).termination.status).toBe("succeeded");
    await second.client.submit({ order_id: "bad", lines: [{ sku: "X", quantity: 1 }], total_cents: 1 }, { headers: { tenant_id: "acme" }, runId: "order-bad" });
    expect((await second.runtime.wait("order-bad")).termination.status).toBe("failed");
    await w2.shutdown();
    await second.queue.close();

    expect(await value("taquba.run.submitted")).toBe(2);
    expect(await value("taquba.run.terminated", "succeeded")).toBe(1);
    expect(await value("taquba.run.terminated", "failed")).toBe(1);
    // reserve x2 (one retried), await_payment, pack, ship; the bad order's one attempt dead-lettered.
    expect(await value("taquba.step.attempts", "completed")).toBe(4);
    expect(await value("taquba.step.attempts", "retried")).toBe(1);
    expect(await value("taquba.step.attempts", "dead_lettered")).toBe(1);
    expect(await value("taquba.step.retries")).toBe(1);
    expect(await value("taquba.job.dead_lettered")).toBe(1);
    expect(await value("taquba.signal.sent", "delivered")).toBe(1);
    expect(await value("taquba.signal.sent", "buffered")).toBe(1);
    const duration = (await points("taquba.step.duration")).get("");
    expect(duration).toBeDefined();
    expect((duration!.value as Histogram).count).toBe(6);
  });
});
