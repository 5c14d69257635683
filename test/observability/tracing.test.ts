/**
 * @module Spans of a typed workflow through the OpenTelemetry SDK's
 * in-memory exporter: a four-step order (the first step retried once, the
 * second waiting for a signal) worked across a restart joins the trace of
 * the request that submitted it, each step attempt a child of the submit
 * span, the failed attempt recording its error.
 */
import { context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStore, type ObjectStore, NoopTerminalHook, Queue, WorkflowDispatcher, WorkflowRuntime } from "taquba";
import { orders } from "../../generated/index.js";

const exporter = new InMemorySpanExporter();
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});

afterAll(() => {
  trace.disable();
  context.disable();
});

function handler(): orders.OrderFulfilHandler {
  return {
    async reserve(p, ctx) {
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
  const queue = await Queue.open(store, "shop", { flushIntervalMs: 1, queueConfigs: { "workflow-steps": { backoff: { baseMs: 0, maxMs: 0 } } } });
  const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: handler() }).build();
  const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
    .logger({ error: () => undefined })
    .build();
  return { queue, runtime, client: orders.client(runtime).orderFulfil };
}

const byName = (spans: readonly ReadableSpan[], name: string) => spans.filter((s) => s.name === name);

describe("tracing", () => {
  it("puts every step attempt of a run, across a restart, under the submit span of the request's trace", async () => {
    const store = new MemoryStore();
    const first = await open(store);
    const worker = first.runtime.spawn();
    const request = trace.getTracer("test").startSpan("POST /orders");
    const runId = "order-t1";
    await context.with(trace.setSpan(context.active(), request), () =>
      first.client.submit({ order_id: "t1", lines: [{ sku: "BOOK", quantity: 1 }], total_cents: 900 }, { headers: { tenant_id: "acme" }, runId }),
    );
    request.end();
    // Reserve fails once, then parks the run on the payment signal: stop there, as a crash or deploy would.
    for (let i = 0; i < 200 && byName(exporter.getFinishedSpans(), "orders.order.fulfil.reserve").length < 2; i++) await new Promise((r) => setImmediate(r));
    await worker.shutdown();
    await first.queue.close();

    const second = await open(store);
    const worker2 = second.runtime.spawn();
    expect(await second.client.signals.paymentReceived({ order_id: "t1" }, { amount_cents: 900 })).toBe("delivered");
    const end = await second.runtime.wait(runId);
    expect(end.termination.status).toBe("succeeded");
    await worker2.shutdown();
    await second.queue.close();

    const spans = exporter.getFinishedSpans();
    const traceId = request.spanContext().traceId;
    const [submit] = byName(spans, "taquba.submit");
    expect(submit).toBeDefined();
    expect(submit!.kind).toBe(SpanKind.PRODUCER);
    expect(submit!.spanContext().traceId).toBe(traceId);
    expect(submit!.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(submit!.attributes).toMatchObject({ "taquba.run.id": runId, "taquba.queue": "workflow-steps", "taquba.outcome": "submitted" });

    // The signal send joins the trace of whoever sent it (here none: its own trace).
    const [send] = byName(spans, "taquba.signal.send");
    expect(send!.attributes).toMatchObject({ "taquba.queue": "workflow-steps", "taquba.outcome": "delivered" });
    expect(send!.kind).toBe(SpanKind.PRODUCER);

    const steps = ["reserve", "await_payment", "pack", "ship"];
    const stepSpans = spans.filter((s) => s.name.startsWith("orders.order.fulfil."));
    expect(stepSpans.map((s) => s.name)).toEqual(["reserve", "reserve", "await_payment", "pack", "ship"].map((n) => `orders.order.fulfil.${n}`));
    for (const s of stepSpans) {
      expect(s.kind).toBe(SpanKind.CONSUMER);
      expect(s.spanContext().traceId).toBe(traceId);
      // A child of the submit span, whichever runtime (before or after the restart) worked it.
      expect(s.parentSpanContext?.spanId).toBe(submit!.spanContext().spanId);
      expect(s.attributes["taquba.run.id"]).toBe(runId);
      expect(s.attributes["taquba.workflow"]).toBe("orders.order.fulfil");
      expect(steps).toContain(s.attributes["taquba.step.name"]);
    }
    const [failed, retried] = stepSpans;
    expect(failed!.attributes).toMatchObject({ "taquba.step": 0, "taquba.attempt": 1, "taquba.outcome": "retried", "taquba.error.kind": "transient" });
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed!.events.find((e) => e.name === "exception")?.attributes?.["exception.message"]).toBe("stock service unavailable");
    expect(retried!.attributes).toMatchObject({ "taquba.step": 0, "taquba.attempt": 2, "taquba.outcome": "completed" });
    expect(retried!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(stepSpans[4]!.attributes).toMatchObject({ "taquba.step": 3, "taquba.outcome": "completed" });
  });

  it("a run submitted outside any span starts its own trace", async () => {
    exporter.reset();
    const env = await open(new MemoryStore());
    const worker = env.runtime.spawn();
    const parent: Span | undefined = trace.getActiveSpan();
    expect(parent).toBeUndefined();
    await env.client.submit({ order_id: "t2", lines: [{ sku: "BOOK", quantity: 1 }], total_cents: 900 }, { headers: { tenant_id: "acme" }, runId: "order-t2" });
    await env.client.signals.paymentReceived({ order_id: "t2" }, { amount_cents: 900 });
    expect((await env.runtime.wait("order-t2")).termination.status).toBe("succeeded");
    await worker.shutdown();
    await env.queue.close();
    const [submit] = byName(exporter.getFinishedSpans(), "taquba.submit");
    expect(submit!.parentSpanContext).toBeUndefined();
    // The run's spans share one trace; the signal send, made outside any span, has its own.
    const runSpans = exporter.getFinishedSpans().filter((s) => s.name !== "taquba.signal.send");
    expect(new Set(runSpans.map((s) => s.spanContext().traceId))).toEqual(new Set([submit!.spanContext().traceId]));
    expect(runSpans).toHaveLength(6); // submit, reserve twice, await_payment, pack, ship
  });
});
