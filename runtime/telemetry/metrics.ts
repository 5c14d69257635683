/**
 * @module Metrics through `@opentelemetry/api` (loaded by `tracing.ts`):
 * the instruments are made on the global meter provider and remade when a
 * different provider is registered; without the API nothing is recorded.
 * Durations are in seconds, as the OpenTelemetry semantic conventions ask.
 */
import type * as Otel from "@opentelemetry/api";
import { otelApi, SCOPE } from "./tracing.js";

/** Every instrument taquba records to. */
export interface Instruments {
  readonly runsSubmitted: Otel.Counter;
  readonly runsTerminated: Otel.Counter;
  readonly stepAttempts: Otel.Counter;
  readonly stepRetries: Otel.Counter;
  readonly deadLetters: Otel.Counter;
  readonly signals: Otel.Counter;
  readonly stepDuration: Otel.Histogram;
}

let cached: { provider: Otel.MeterProvider; instruments: Instruments } | undefined;

function make(meter: Otel.Meter): Instruments {
  return {
    runsSubmitted: meter.createCounter("taquba.run.submitted", { unit: "{run}", description: "Runs newly submitted." }),
    runsTerminated: meter.createCounter("taquba.run.terminated", {
      unit: "{run}",
      description: "Runs that ended, by taquba.outcome (succeeded, failed, cancelled).",
    }),
    stepAttempts: meter.createCounter("taquba.step.attempts", { unit: "{attempt}", description: "Step attempts, by taquba.outcome." }),
    stepRetries: meter.createCounter("taquba.step.retries", { unit: "{attempt}", description: "Failed step attempts that will be retried." }),
    deadLetters: meter.createCounter("taquba.job.dead_lettered", { unit: "{job}", description: "Jobs dead-lettered, by taquba.queue." }),
    signals: meter.createCounter("taquba.signal.sent", { unit: "{signal}", description: "Signals sent, by taquba.outcome (delivered, buffered)." }),
    stepDuration: meter.createHistogram("taquba.step.duration", {
      unit: "s",
      description: "Time from a step attempt's claim to its settlement being handed to the queue.",
    }),
  };
}

/** The instruments of the current global meter provider; undefined without the API. */
export function instruments(): Instruments | undefined {
  const api = otelApi();
  if (api === undefined) return undefined;
  const provider = api.metrics.getMeterProvider();
  if (cached?.provider !== provider) cached = { provider, instruments: make(provider.getMeter(SCOPE)) };
  return cached.instruments;
}
