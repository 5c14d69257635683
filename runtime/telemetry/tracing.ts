/**
 * @module Tracing through `@opentelemetry/api`, an optional peer
 * dependency: loaded once by `Queue.open` with a dynamic import, so the
 * package works without it. Without the API, or without a registered
 * tracer provider, every span site costs one check and creates nothing.
 *
 * Trace context travels as a W3C `traceparent` value in a run's reserved
 * headers, written at submit; each step attempt span is a child of it, so
 * every step of a run joins the submitting request's trace on whichever
 * process or restart works it.
 */
import type * as Otel from "@opentelemetry/api";
import { ownHeader } from "../option-values.js";

/** The reserved run header that carries the submit span's traceparent (the workflow layer's `HEADER_TRACEPARENT`). */
export const RUN_TRACEPARENT = "workflow.traceparent";

/** The instrumentation scope name of every span and instrument. */
export const SCOPE = "taquba";

let api: typeof Otel | undefined;
let loading: Promise<void> | undefined;
let switchedOff = false;

/** Loads `@opentelemetry/api` when it is installed; resolves either way. */
export function loadTelemetry(): Promise<void> {
  loading ??= import("@opentelemetry/api").then(
    (m) => {
      api = m;
    },
    () => undefined,
  );
  return loading;
}

/** The loaded API, or undefined (not installed, not loaded yet, or switched off). */
export function otelApi(): typeof Otel | undefined {
  return switchedOff ? undefined : api;
}

/**
 * @internal Turns every instrumentation point into its first check (as if
 * the API were not installed), or back on: the baseline of the overhead
 * benchmark.
 */
export function setTelemetrySwitchedOff(off: boolean): void {
  switchedOff = off;
}

/** The tracer of the registered provider; undefined when there is none (the no-cost path). */
export function activeTracer(): Otel.Tracer | undefined {
  if (api === undefined || switchedOff) return undefined;
  const provider = api.trace.getTracerProvider() as Otel.TracerProvider & { getDelegateTracer?: (name: string) => Otel.Tracer | undefined };
  return typeof provider.getDelegateTracer === "function" ? provider.getDelegateTracer(SCOPE) : provider.getTracer(SCOPE);
}

/** Whether spans are being made (a tracer provider is registered): the cheap check before building a span's attributes. */
export function tracing(): boolean {
  return activeTracer() !== undefined;
}

/** Whether tracing is on and a span is active: a child span would have a parent. */
export function tracingWithinSpan(): boolean {
  return activeTracer() !== undefined && api!.trace.getActiveSpan() !== undefined;
}

/** Attribute values a span takes, by `taquba.` name. */
export type SpanAttributes = Record<string, string | number | boolean>;

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C `traceparent` of `span`. */
export function traceparentOf(span: Otel.Span): string {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The parent context a `traceparent` header names; the root context for a missing or malformed one. */
export function contextOf(traceparent: string | undefined): Otel.Context | undefined {
  if (api === undefined) return undefined;
  const m = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (m === null) return api.ROOT_CONTEXT;
  return api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16), isRemote: true });
}

/** The kinds of span taquba makes. */
export type SpanKindName = "producer" | "consumer" | "client" | "internal";

/**
 * Starts a span under `parent` (a traceparent, or the active context when
 * undefined), at `startTimeMs` (epoch ms) or now; undefined when tracing is off.
 */
export function startSpan(name: string, attributes: SpanAttributes, parent?: string, kind?: SpanKindName, startTimeMs?: number): Otel.Span | undefined {
  const tracer = activeTracer();
  if (tracer === undefined || api === undefined) return undefined;
  const ctx = parent === undefined ? api.context.active() : contextOf(parent);
  const K = api.SpanKind;
  const spanKind = kind === "producer" ? K.PRODUCER : kind === "consumer" ? K.CONSUMER : kind === "client" ? K.CLIENT : K.INTERNAL;
  return tracer.startSpan(name, startTimeMs === undefined ? { attributes, kind: spanKind } : { attributes, kind: spanKind, startTime: startTimeMs }, ctx);
}

/** Runs `fn` with `span` as the active span (so spans it starts, the user's included, are its children); just `fn()` without one. */
export function withActiveSpan<T>(span: Otel.Span | undefined, fn: () => T): T {
  if (span === undefined || api === undefined) return fn();
  return api.context.with(api.trace.setSpan(api.context.active(), span), fn);
}

/** The W3C `traceparent` of the active span, or undefined when none is active or tracing is off. */
export function activeTraceparent(): string | undefined {
  if (api === undefined || switchedOff) return undefined;
  const span = api.trace.getActiveSpan();
  return span === undefined || !span.spanContext().traceId ? undefined : traceparentOf(span);
}

/**
 * Runs `fn` inside a span that ends when its promise settles: OK with
 * `outcome(result)`'s attributes, or ERROR with the rejection recorded and
 * `failure(error)`'s kind and attributes.
 * Without tracing, `fn()` and nothing else.
 */
export function traced<T>(
  name: string,
  attributes: SpanAttributes,
  kind: SpanKindName,
  fn: () => Promise<T>,
  outcome: (result: T) => SpanAttributes,
  failure: (error: unknown) => { kind: string; attributes?: SpanAttributes },
  parent?: string,
): Promise<T> {
  const span = startSpan(name, attributes, parent, kind);
  if (span === undefined) return fn();
  let p: Promise<T>;
  try {
    p = withActiveSpan(span, fn);
  } catch (e) {
    p = Promise.reject(e);
  }
  return p.then(
    (r) => {
      endOk(span, outcome(r));
      return r;
    },
    (e: unknown) => {
      const f = failure(e);
      endWithError(span, e, f.kind, f.attributes);
      throw e;
    },
  );
}

/** Ends `span` as failed with `error` recorded, and `taquba.error.kind` set. */
export function endWithError(span: Otel.Span | undefined, error: unknown, errorKind: string, attributes: SpanAttributes = {}): void {
  if (span === undefined || api === undefined) return;
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setAttributes({ ...attributes, "taquba.error.kind": errorKind });
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: e.message });
  span.end();
}

/** Ends `span` as succeeded with `attributes` added, at `endTimeMs` (epoch ms) or now. */
export function endOk(span: Otel.Span | undefined, attributes: SpanAttributes = {}, endTimeMs?: number): void {
  if (span === undefined) return;
  span.setAttributes(attributes);
  span.end(endTimeMs);
}

// The span of each step attempt in flight, by step job id and attempt (a
// retry can be claimed before the failed attempt's bookkeeping ends), so the
// typed dispatcher, which knows workflow and step names, can name it.
const stepSpans = new Map<string, Otel.Span>();

export function registerStepSpan(jobId: string, attempt: number, span: Otel.Span | undefined): void {
  if (span !== undefined) stepSpans.set(`${jobId}#${attempt}`, span);
}

export function stepSpanOf(jobId: string, attempt: number): Otel.Span | undefined {
  return stepSpans.size === 0 ? undefined : stepSpans.get(`${jobId}#${attempt}`);
}

export function forgetStepSpan(jobId: string, attempt: number): void {
  if (stepSpans.size !== 0) stepSpans.delete(`${jobId}#${attempt}`);
}

/**
 * The span of a signal wait, made when the waiting step is first claimed
 * (the wait may have begun in another process, before a restart): from the
 * commit that registered the wait (the step's enqueue) to the signal's
 * arrival (its wake) or, timed out, to the claim; under the run's trace.
 */
export function traceSignalWait(
  queue: string,
  job: { id: string; headers: Readonly<Record<string, string>>; enqueuedAt: number; claimedAt: number; wokenAt?: number },
  runId: string,
  step: number,
  timedOut: boolean,
): void {
  if (activeTracer() === undefined) return;
  const attributes = { "taquba.run.id": runId, "taquba.step": step, "taquba.queue": queue, "taquba.job.id": job.id };
  const span = startSpan("taquba.signal.wait", attributes, ownHeader(job.headers, RUN_TRACEPARENT) ?? "", "internal", job.enqueuedAt);
  const endAt = timedOut ? job.claimedAt : (job.wokenAt ?? job.claimedAt);
  endOk(span, { "taquba.outcome": timedOut ? "timed_out" : "delivered" }, Math.max(job.enqueuedAt, endAt));
}

/** Adds `attributes` to the active span, if tracing is on and one is active. */
export function annotateActiveSpan(attributes: SpanAttributes): void {
  if (api === undefined || switchedOff) return;
  api.trace.getActiveSpan()?.setAttributes(attributes);
}

/** The reserved trace header of the active span (`{ [RUN_TRACEPARENT]: traceparent }`), or `{}`. */
export function activeTraceHeader(): Record<string, string> {
  const t = activeTraceparent();
  return t === undefined ? {} : { [RUN_TRACEPARENT]: t };
}
