/**
 * @module Metrics through `@opentelemetry/api` (loaded by `tracing.ts`):
 * the instruments are made on the global meter provider and remade when a
 * different provider is registered; without the API, or with only the
 * API's no-op provider, nothing is made and nothing is recorded.
 * Durations are in seconds, as the OpenTelemetry semantic conventions ask.
 *
 * The gauges are observed: each open queue store registers a source of its
 * readings, and the provider's reader pulls them when it collects.
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
  readonly signalsTimedOut: Otel.Counter;
  readonly retentionUnreadable: Otel.Counter;
  readonly stepDuration: Otel.Histogram;
  readonly runStartDelay: Otel.Histogram;
  readonly stepTransition: Otel.Histogram;
  readonly engineCommit: Otel.Histogram;
  readonly walPut: Otel.Histogram;
}

/** What one open queue store reports to the gauges when they are collected. */
export interface GaugeReadings {
  /** The queue store's name (as given to `Queue.open`). */
  readonly store: string;
  /** Jobs by queue and state. */
  readonly depth: ReadonlyArray<{ queue: string; state: string; jobs: number }>;
  /** Per queue with pending jobs: seconds since the oldest of them was enqueued. */
  readonly oldestPending: ReadonlyArray<{ queue: string; ageSeconds: number }>;
  /** WAL objects written since the last checkpoint. */
  readonly walObjectsSinceCheckpoint: number;
}

/** A source of {@link GaugeReadings}, read at once or after loading what it reads; a failing one is skipped for that collection. */
export type GaugeSource = () => GaugeReadings | undefined | Promise<GaugeReadings | undefined>;

const sources = new Set<GaugeSource>();

/** Adds `source` to what the gauges report; returns its removal. */
export function registerGaugeSource(source: GaugeSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}

/** @internal How many sources are registered (for tests: a closed queue store leaves none). */
export function gaugeSourceCount(): number {
  return sources.size;
}

let cached: { provider: Otel.MeterProvider; instruments: Instruments | undefined } | undefined;

// Bucket bounds (s) for latencies from well under a millisecond (memory) to tens of seconds (slow stores).
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function make(meter: Otel.Meter): Instruments {
  const seconds = (name: string, description: string) =>
    meter.createHistogram(name, { unit: "s", description, advice: { explicitBucketBoundaries: LATENCY_BUCKETS } });
  const depth = meter.createObservableGauge("taquba.queue.jobs", { unit: "{job}", description: "Jobs by taquba.queue and taquba.job.state." });
  const oldest = meter.createObservableGauge("taquba.queue.oldest_pending.age", {
    unit: "s",
    description: "Seconds since the oldest pending job of each queue was enqueued.",
  });
  const wal = meter.createObservableGauge("taquba.wal.objects_since_checkpoint", {
    unit: "{object}",
    description: "WAL objects written since the last checkpoint, by taquba.store.",
  });
  meter.addBatchObservableCallback(
    async (r) => {
      for (const source of sources) {
        let g: GaugeReadings | undefined;
        try {
          g = await source();
        } catch {
          continue; // a closed or failed store has nothing to report
        }
        if (g === undefined) continue;
        for (const d of g.depth) r.observe(depth, d.jobs, { "taquba.store": g.store, "taquba.queue": d.queue, "taquba.job.state": d.state });
        for (const o of g.oldestPending) r.observe(oldest, o.ageSeconds, { "taquba.store": g.store, "taquba.queue": o.queue });
        r.observe(wal, g.walObjectsSinceCheckpoint, { "taquba.store": g.store });
      }
    },
    [depth, oldest, wal],
  );
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
    signalsTimedOut: meter.createCounter("taquba.signal.timed_out", { unit: "{wait}", description: "Signal waits that ended at their timeout." }),
    retentionUnreadable: meter.createCounter("taquba.retention.unreadable", {
      unit: "{run}",
      description: "Runs the memo-retention sweep skipped because their retention marker or terminal record is damaged.",
    }),
    stepDuration: seconds("taquba.step.duration", "Time from a step attempt's claim to its settlement being handed to the queue."),
    runStartDelay: seconds("taquba.run.start.delay", "Time from a run's submission to the claim of its first step."),
    stepTransition: seconds("taquba.step.transition.duration", "Time from the settlement that enqueued a step at once to the step's claim."),
    engineCommit: seconds("taquba.engine.commit.duration", "Time from a durable commit to the engine until it is durable."),
    walPut: seconds("taquba.wal.put.duration", "Time to write one WAL object to the store, retries included."),
  };
}

let noopMeterClass: unknown;

/** The instruments of the current global meter provider; undefined without the API or a registered provider. */
export function instruments(): Instruments | undefined {
  const api = otelApi();
  if (api === undefined) return undefined;
  const provider = api.metrics.getMeterProvider();
  if (cached?.provider === provider) return cached.instruments;
  const meter = provider.getMeter(SCOPE);
  noopMeterClass ??= api.createNoopMeter().constructor;
  cached = { provider, instruments: meter.constructor === noopMeterClass ? undefined : make(meter) };
  return cached.instruments;
}

/** Records `since` (a `performance.now()` reading) to now, in seconds, on `h`. */
export function recordSince(h: Otel.Histogram, since: number, attributes?: Otel.Attributes): void {
  h.record((performance.now() - since) / 1000, attributes);
}

/**
 * Times a durable engine commit: records its latency once it is durable.
 * Returns `commit` unchanged; without metrics, costs one check.
 */
export function timeCommit(commit: Promise<void>): Promise<void> {
  const m = instruments();
  if (m !== undefined) recordWhenDone(commit, m.engineCommit);
  return commit;
}

/** Times one WAL object put: records its latency when it succeeds. Returns `put` unchanged; without metrics, costs one check. */
export function timeWalPut<T>(put: Promise<T>): Promise<T> {
  const m = instruments();
  if (m !== undefined) recordWhenDone(put, m.walPut);
  return put;
}

/**
 * Records in `h` the time from now until `p` succeeds. A function of its
 * own: its closures' context is made only with metrics on, where in the
 * timing functions it was made on every call (a commit's, a WAL put's).
 */
function recordWhenDone(p: Promise<unknown>, h: Otel.Histogram): void {
  const t0 = performance.now();
  p.then(
    () => recordSince(h, t0),
    () => undefined,
  );
}

// When each step enqueued at once by a settlement in this process was handed
// to the queue (performance.now()), by job id, until its claim. Bounded: the
// oldest entry goes first (its step is being claimed elsewhere, or never).
const transitions = new Map<string, number>();
const MAX_TRANSITIONS = 10_000;

/** Notes that a settlement enqueueing step job `jobId` at once was handed to the queue now; without metrics, costs one check. */
export function stepEnqueuedNow(jobId: string): void {
  if (instruments() === undefined) return;
  if (transitions.size >= MAX_TRANSITIONS) transitions.delete(transitions.keys().next().value!);
  transitions.set(jobId, performance.now());
}

/** The time `stepEnqueuedNow` noted for `jobId` (forgotten now), or undefined. */
export function stepClaimed(jobId: string): number | undefined {
  if (transitions.size === 0) return undefined;
  const t = transitions.get(jobId);
  if (t !== undefined) transitions.delete(jobId);
  return t;
}
