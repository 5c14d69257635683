/**
 * @module Spans through the OpenTelemetry SDK's in-memory exporter. The
 * shared order scenario (a typed four-step workflow, reserve retried once,
 * await_payment waiting for a signal, worked across a restart) joins the
 * trace of the request that submitted it: each step attempt and signal wait
 * a child of the submit span, each settlement commit a child of its step
 * attempt, the failed attempt recording its error. A run's terminal hook
 * and its webhook delivery join the run's trace too.
 */
import { createServer } from "node:http";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, runWebhookWorker, StepOutcome, WebhookTerminalHook, WorkflowRuntime } from "taquba";
import { listenOnLoopback, withBody } from "../support/loopback-server.js";
import { until } from "../support/until.js";
import { PAYMENT_TIMEOUT_MS, runOrderScenario, STEP_QUEUE, WORKFLOW } from "./support/order-scenario.js";

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

beforeEach(() => exporter.reset());

const named = (spans: readonly ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
const ofRun = (spans: readonly ReadableSpan[], runId: string) => spans.filter((s) => s.attributes["taquba.run.id"] === runId);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const ms = (t: readonly [number, number]) => t[0] * 1000 + t[1] / 1e6;

describe("tracing", () => {
  it("puts every step attempt and signal wait of a run, across a restart, under the submit span of the request's trace", async () => {
    const request = trace.getTracer("test").startSpan("POST /orders");
    await runOrderScenario({
      submitting: async (submit) => {
        await context.with(trace.setSpan(context.active(), request), submit);
        request.end();
      },
    });
    const spans = exporter.getFinishedSpans();
    const traceId = request.spanContext().traceId;

    // Submits: t1, its duplicate, t2 and t3 inside the request; "bad" outside any span.
    const submits = named(spans, "taquba.submit");
    expect(submits.map((s) => [s.attributes["taquba.run.id"], s.attributes["taquba.outcome"]])).toEqual([
      ["order-t1", "submitted"],
      ["order-t1", "duplicate"],
      ["order-t2", "submitted"],
      ["order-t3", "submitted"],
      ["order-bad", "submitted"],
    ]);
    const [submit] = submits;
    expect(submit!.kind).toBe(SpanKind.PRODUCER);
    expect(submit!.spanContext().traceId).toBe(traceId);
    expect(parentOf(submit!)).toBe(idOf(request as unknown as ReadableSpan));
    expect(submit!.attributes).toMatchObject({ "taquba.queue": STEP_QUEUE });
    expect(parentOf(submits[4]!)).toBeUndefined(); // submitted outside any span: its own trace

    // t1's step attempts, before and after the restart, are children of its submit span.
    const steps = ofRun(spans, "order-t1").filter((s) => s.name.startsWith(`${WORKFLOW}.`));
    expect(steps.map((s) => s.name)).toEqual(["reserve", "reserve", "await_payment", "pack", "ship"].map((n) => `${WORKFLOW}.${n}`));
    for (const s of steps) {
      expect(s.kind).toBe(SpanKind.CONSUMER);
      expect(s.spanContext().traceId).toBe(traceId);
      expect(parentOf(s)).toBe(idOf(submit!));
      expect(s.attributes).toMatchObject({ "taquba.workflow": WORKFLOW, "taquba.queue": STEP_QUEUE });
      expect(typeof s.attributes["taquba.job.id"]).toBe("string");
    }
    const [failed, retried] = steps;
    expect(failed!.attributes).toMatchObject({
      "taquba.step": 0,
      "taquba.step.name": "reserve",
      "taquba.attempt": 1,
      "taquba.outcome": "retried",
      "taquba.error.kind": "transient",
    });
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
    const exception = failed!.events.find((e) => e.name === "exception");
    expect(exception?.attributes?.["exception.message"]).toBe("stock service unavailable");
    expect(String(exception?.attributes?.["exception.stacktrace"])).toMatch(/^Error: stock service unavailable\n\s+at /);
    expect(retried!.attributes).toMatchObject({ "taquba.step": 0, "taquba.attempt": 2, "taquba.outcome": "completed" });
    expect(retried!.status.code).toBe(SpanStatusCode.UNSET);
    expect(steps[4]!.attributes).toMatchObject({ "taquba.step": 3, "taquba.step.name": "ship", "taquba.outcome": "completed" });

    // Each settlement commit is a child of its step attempt, with what the job became.
    for (const [step, outcome] of [
      [failed!, "retried"],
      [retried!, "completed"],
      [steps[4]!, "completed"],
    ] as const) {
      const settles = spans.filter((s) => s.name === "taquba.settle" && parentOf(s) === idOf(step));
      expect(settles).toHaveLength(1);
      expect(settles[0]!.attributes).toMatchObject({
        "taquba.outcome": outcome,
        "taquba.job.id": step.attributes["taquba.job.id"],
        "taquba.attempt": step.attributes["taquba.attempt"],
      });
    }

    // The signal waits: t1's delivered after the restart, t2's timed out (t3's, cancelled, never ended in a claim);
    // each under its run's submit span.
    const waits = named(spans, "taquba.signal.wait");
    expect(waits.map((w) => [w.attributes["taquba.run.id"], w.attributes["taquba.outcome"]])).toEqual([
      ["order-t1", "delivered"],
      ["order-t2", "timed_out"],
    ]);
    for (const w of waits) {
      expect(w.attributes).toMatchObject({ "taquba.step": 1, "taquba.queue": STEP_QUEUE });
      expect(w.spanContext().traceId).toBe(traceId);
      expect(parentOf(w)).toBe(idOf(submits.find((s) => s.attributes["taquba.run.id"] === w.attributes["taquba.run.id"])!));
    }
    // Timed on the queue's clock: t2 waited the whole timeout, from before the restart.
    expect(ms(waits[1]!.endTime) - ms(waits[1]!.startTime)).toBeGreaterThanOrEqual(PAYMENT_TIMEOUT_MS);
    expect(ms(waits[0]!.endTime) - ms(waits[0]!.startTime)).toBeLessThan(PAYMENT_TIMEOUT_MS);

    // The signal send joins the trace of whoever sent it (here none: its own trace).
    const sends = named(spans, "taquba.signal.send");
    expect(sends.map((s) => s.attributes["taquba.outcome"])).toEqual(["delivered", "buffered"]);
    expect(sends[0]!.kind).toBe(SpanKind.PRODUCER);

    // The dead-lettered run: its one attempt and its settlement say so.
    const [bad] = ofRun(spans, "order-bad").filter((s) => s.name === `${WORKFLOW}.reserve`);
    expect(bad!.attributes).toMatchObject({ "taquba.outcome": "dead_lettered", "taquba.error.kind": "permanent" });
    expect(spans.find((s) => s.name === "taquba.settle" && parentOf(s) === idOf(bad!))?.attributes["taquba.outcome"]).toBe("dead_lettered");

    // Nothing else starts a trace: only the request, and the submit and sends made outside any span.
    const roots = spans.filter((s) => parentOf(s) === undefined).map((s) => s.name);
    expect(roots.sort()).toEqual(["POST /orders", "taquba.signal.send", "taquba.signal.send", "taquba.submit"]);
  });

  it("puts a run's terminal hook and its webhook delivery in the run's trace, a failed delivery recording its error", async () => {
    let answers = 0;
    const server = createServer(withBody((_req, _body, res) => res.writeHead(++answers === 1 ? 503 : 204).end()));
    const { port, close } = await listenOnLoopback(server);
    const clock = new MockClock();
    const store = new MemoryStore();
    const queue = await Queue.open(store, "wf", { clock, flushIntervalMs: 1, queueConfigs: { callbacks: { backoff: { baseMs: 0, maxMs: 0 } } } });
    const runtime = WorkflowRuntime.builder(
      queue,
      store,
      { runStep: async (s) => StepOutcome.succeed(s.payload) },
      new WebhookTerminalHook({ queueName: "callbacks" }),
    )
      .clock(clock)
      .build();
    const worker = runtime.spawn();
    const ac = new AbortController();
    const delivering = runWebhookWorker(queue, "callbacks", { allowLoopback: true, clock, signal: ac.signal, onError: () => undefined });
    try {
      const secretPath = "/hooks/s3cr3t-PATH";
      await runtime.submit({ input: new Uint8Array([1]), runId: "order-9", options: { headers: { callback_url: `http://127.0.0.1:${port}${secretPath}` } } });
      await until("the callback delivered", () => named(exporter.getFinishedSpans(), "taquba.webhook.delivery").length === 2);
      const spans = exporter.getFinishedSpans();
      const [submit] = named(spans, "taquba.submit");
      const [hook] = named(spans, "taquba.terminal_hook");
      expect(hook!.attributes).toMatchObject({
        "taquba.run.id": "order-9",
        "taquba.run.status": "succeeded",
        "taquba.outcome": "completed",
        "taquba.attempt": 1,
      });
      expect(parentOf(hook!)).toBe(idOf(submit!));
      expect(hook!.spanContext().traceId).toBe(submit!.spanContext().traceId);
      const deliveries = named(spans, "taquba.webhook.delivery");
      for (const d of deliveries) {
        expect(d.kind).toBe(SpanKind.CLIENT);
        expect(parentOf(d)).toBe(idOf(hook!));
        expect(d.attributes).toMatchObject({ "taquba.queue": "callbacks", "http.request.method": "POST" });
        // The callback URL came from a header; no attribute carries it.
        expect(JSON.stringify(d.attributes)).not.toContain("s3cr3t");
      }
      expect(deliveries[0]!.attributes).toMatchObject({
        "taquba.attempt": 1,
        "taquba.outcome": "retried",
        "taquba.error.kind": "transient",
        "http.response.status_code": 503,
      });
      expect(deliveries[0]!.status.code).toBe(SpanStatusCode.ERROR);
      expect(deliveries[1]!.attributes).toMatchObject({ "taquba.attempt": 2, "taquba.outcome": "delivered", "http.response.status_code": 204 });
    } finally {
      ac.abort();
      await delivering;
      await worker.shutdown();
      await queue.close();
      await close();
    }
  });
});
