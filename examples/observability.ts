/**
 * Observability: a run's trace tree, its metrics and its log events.
 *
 * Shows: with the OpenTelemetry SDK registered (here its in-memory span
 * exporter and a pull metric reader), a submit inside a request's span
 * becomes a `taquba.submit` span of that trace and every step attempt a
 * child of it (with its settlement commit as its child), a failed attempt
 * carrying its error; the counters, histograms and gauges report; the
 * `logger` option receives the retry at warn, with the error's stack.
 *
 * Run: npx tsx examples/observability.ts
 */
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type Logger, type StepRunner } from "taquba";

// The SDK, registered as an application would at start-up.
const spans = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
class PullReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}
const reader = new PullReader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

// A pino-style logger: the structured object first, then the message.
const logger: Logger = {
  info: (_obj, msg) => console.log(`log info:  ${msg}`),
  warn: (obj, msg) => console.log(`log warn:  ${msg} (${(obj["err"] as { stack?: string }).stack?.split("\n")[0]})`),
  error: (_obj, msg) => console.log(`log error: ${msg}`),
};

// Three steps: reserve (fails once, then continues), charge, ship.
let reserveCalls = 0;
const runner: StepRunner = {
  async runStep(step) {
    if (step.stepNumber === 0 && ++reserveCalls === 1) throw new Error("inventory service timed out");
    return step.stepNumber < 2 ? StepOutcome.continueNow(step.payload) : StepOutcome.succeed(step.payload);
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "shop", { logger, queueConfigs: { "workflow-steps": { backoff: { baseMs: 0, maxMs: 0 } } } });
const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).logger(logger).build();
const worker = runtime.spawn();

const request = trace.getTracer("shop-api").startSpan("POST /checkout");
await context.with(trace.setSpan(context.active(), request), () =>
  runtime.submit({ runId: "checkout-42", input: new TextEncoder().encode("{}"), options: { headers: { tenant: "acme" } } }),
);
request.end();
const end = await runtime.wait("checkout-42");
console.log(`run checkout-42 ${end.termination.status} at step ${end.termination.finalStep}`);
await worker.shutdown();
// Collected while the queue is open, so its gauges (jobs by state, WAL objects since checkpoint) report too.
const { resourceMetrics } = await reader.collect();
await queue.close();

// The trace tree: each span under its parent, in start order.
const finished = [...spans.getFinishedSpans()].sort((a, b) => (a.startTime[0] - b.startTime[0]) * 1e9 + (a.startTime[1] - b.startTime[1]));
const children = (parentId: string | undefined) => finished.filter((s) => s.parentSpanContext?.spanId === parentId);
function print(s: ReadableSpan, depth: number): void {
  const a = s.attributes;
  const detail =
    s.name === "taquba.settle"
      ? `settlement commit: ${a["taquba.outcome"]}`
      : a["taquba.step"] === undefined
        ? `run ${a["taquba.run.id"] ?? "-"}`
        : `step ${a["taquba.step"]} attempt ${a["taquba.attempt"]} ${a["taquba.outcome"]}`;
  const error = s.status.code === 2 ? ` ERROR: ${s.status.message}` : "";
  console.log(`trace: ${"  ".repeat(depth)}${s.name} (${s.name === "POST /checkout" ? "request" : detail})${error}`);
  for (const c of children(s.spanContext().spanId)) print(c, depth + 1);
}
for (const root of children(undefined)) print(root, 0);

// The metrics, as a metrics backend would read them (the gauges of the step queue only).
for (const m of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)) {
  for (const p of m.dataPoints) {
    if (p.attributes["taquba.queue"] !== undefined && p.attributes["taquba.queue"] !== "workflow-steps") continue;
    const v = typeof p.value === "number" ? p.value : `${(p.value as { count: number }).count} samples`;
    const label = p.attributes["taquba.outcome"] ?? p.attributes["taquba.job.state"];
    console.log(`metric: ${m.descriptor.name}${label === undefined ? "" : `{${String(label)}}`} = ${v}`);
  }
}
