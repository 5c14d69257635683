/**
 * @module Metrics through the OpenTelemetry SDK's meter provider and a
 * pull reader: the shared order scenario (a typed four-step workflow,
 * reserve retried once, await_payment waiting for a signal, worked across a
 * restart; one wait timing out, one run cancelled, one dead-lettered) moves each
 * documented counter by the right amount, records one sample per event in
 * each histogram, and the observed gauges read the queue store's state.
 */
import { metrics } from "@opentelemetry/api";
import { type DataPoint, type Histogram, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, SettlementEffects, StepOutcome, WorkflowRuntime } from "taquba";
import { gaugeSourceCount } from "../../runtime/telemetry/metrics.js";
import { runOrderScenario, STEP_QUEUE } from "./support/order-scenario.js";

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

type Point = DataPoint<number | Histogram>;

/** Every data point of every metric, by name. */
async function collect(): Promise<Map<string, { unit: string; points: Point[] }>> {
  const { resourceMetrics } = await reader.collect();
  const out = new Map<string, { unit: string; points: Point[] }>();
  for (const sm of resourceMetrics.scopeMetrics) {
    for (const m of sm.metrics) out.set(m.descriptor.name, { unit: m.descriptor.unit, points: m.dataPoints as Point[] });
  }
  return out;
}

/** The value of `name`'s point whose attributes include `attrs` (0 when none). */
function reading(all: Map<string, { points: Point[] }>, name: string, attrs: Record<string, string> = {}): number {
  const p = all.get(name)?.points.find((x) => Object.entries(attrs).every(([k, v]) => x.attributes[k] === v));
  if (p === undefined) return 0;
  return typeof p.value === "number" ? p.value : p.value.count;
}

const COUNTERS: ReadonlyArray<readonly [string, Record<string, string>]> = [
  ["taquba.run.submitted", {}],
  ["taquba.run.terminated", { "taquba.outcome": "succeeded" }],
  ["taquba.run.terminated", { "taquba.outcome": "failed" }],
  ["taquba.run.terminated", { "taquba.outcome": "cancelled" }],
  ["taquba.step.attempts", { "taquba.outcome": "completed" }],
  ["taquba.step.attempts", { "taquba.outcome": "retried" }],
  ["taquba.step.attempts", { "taquba.outcome": "dead_lettered" }],
  ["taquba.step.retries", {}],
  ["taquba.job.dead_lettered", {}],
  ["taquba.signal.sent", { "taquba.outcome": "delivered" }],
  ["taquba.signal.sent", { "taquba.outcome": "buffered" }],
  ["taquba.signal.timed_out", {}],
  ["taquba.step.duration", {}],
  ["taquba.run.start.delay", {}],
  ["taquba.step.transition.duration", {}],
];

describe("metrics", () => {
  it("count runs, step attempts, retries, dead letters and signals, and time steps, across a restart", async () => {
    const before = await collect();
    for (const [name, attrs] of COUNTERS) expect(reading(before, name, attrs), name).toBe(0);
    let gauges: Awaited<ReturnType<typeof collect>> | undefined;
    let walSinceCheckpoint = -1;
    await runOrderScenario({
      beforeClose: async (shop) => {
        gauges = await collect();
        walSinceCheckpoint = shop.queue.engineStats.walObjectsSinceCheckpoint;
      },
    });
    const after = await collect();
    const delta = Object.fromEntries(COUNTERS.map(([name, attrs]) => [`${name}${JSON.stringify(attrs)}`, reading(after, name, attrs)]));
    expect(delta).toEqual({
      // t1, t2, t3 and bad; the duplicate submission of t1 is not counted.
      "taquba.run.submitted{}": 4,
      'taquba.run.terminated{"taquba.outcome":"succeeded"}': 1,
      'taquba.run.terminated{"taquba.outcome":"failed"}': 2, // t2 (payment timeout) and bad
      'taquba.run.terminated{"taquba.outcome":"cancelled"}': 1, // t3, cancelled while it waited
      // t1: reserve (2nd), await_payment, pack, ship; t2: reserve (2nd), await_payment; t3: reserve (2nd).
      'taquba.step.attempts{"taquba.outcome":"completed"}': 7,
      'taquba.step.attempts{"taquba.outcome":"retried"}': 3, // reserve's first attempt of t1, t2 and t3
      'taquba.step.attempts{"taquba.outcome":"dead_lettered"}': 1, // bad's reserve
      "taquba.step.retries{}": 3,
      "taquba.job.dead_lettered{}": 1,
      'taquba.signal.sent{"taquba.outcome":"delivered"}': 1,
      'taquba.signal.sent{"taquba.outcome":"buffered"}': 1,
      "taquba.signal.timed_out{}": 1,
      "taquba.step.duration{}": 11, // one sample per attempt
      "taquba.run.start.delay{}": 4, // one per run's first step
      "taquba.step.transition.duration{}": 2, // t1's await_payment -> pack -> ship, continued at once
    });
    for (const name of [
      "taquba.step.duration",
      "taquba.run.start.delay",
      "taquba.step.transition.duration",
      "taquba.engine.commit.duration",
      "taquba.wal.put.duration",
    ]) {
      expect(after.get(name)?.unit, name).toBe("s");
    }
    // Every durable commit and WAL put of both processes is timed.
    expect(reading(after, "taquba.engine.commit.duration")).toBeGreaterThan(10);
    expect(reading(after, "taquba.wal.put.duration")).toBeGreaterThan(10);
    expect(after.get("taquba.run.submitted")?.unit).toBe("{run}");

    // The gauges as the second process read them before it closed.
    const g = gauges!;
    const jobs = (state: string) => reading(g, "taquba.queue.jobs", { "taquba.store": "shop", "taquba.queue": STEP_QUEUE, "taquba.job.state": state });
    expect([jobs("pending"), jobs("scheduled"), jobs("claimed"), jobs("dead")]).toEqual([0, 0, 0, 1]);
    expect(reading(g, "taquba.wal.objects_since_checkpoint", { "taquba.store": "shop" })).toBe(walSinceCheckpoint);
    expect(walSinceCheckpoint).toBeGreaterThan(0);
    // A closed queue store is no longer observed.
    expect(gaugeSourceCount()).toBe(0);
  });

  it("observe each queue's oldest pending job's age on the queue clock, and jobs by state", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(new MemoryStore(), "gauges", { clock, flushIntervalMs: 1 });
    try {
      await queue.enqueue("mail", new Uint8Array([1]), { priority: 5 });
      clock.advance(4_000);
      await queue.enqueue("mail", new Uint8Array([2]), { priority: 1 });
      await queue.enqueue("mail", new Uint8Array([3]), { runAt: clock.now() + 60_000 });
      clock.advance(1_500);
      const g = await collect();
      const at = { "taquba.store": "gauges", "taquba.queue": "mail" };
      // The oldest pending job is in the lower-priority lane: 5.5 s old.
      expect(reading(g, "taquba.queue.oldest_pending.age", at)).toBe(5.5);
      expect(reading(g, "taquba.queue.jobs", { ...at, "taquba.job.state": "pending" })).toBe(2);
      expect(reading(g, "taquba.queue.jobs", { ...at, "taquba.job.state": "scheduled" })).toBe(1);
      const [job] = await queue.claimBatch("mail", 1);
      await queue.ack(job!);
      const g2 = await collect();
      expect(reading(g2, "taquba.queue.jobs", { ...at, "taquba.job.state": "pending" })).toBe(1);
      expect(g2.get("taquba.queue.oldest_pending.age")?.points.map((p) => p.value)).toHaveLength(1);
      // An ack claiming its follow-up counts its done job in the follow-up's claimed entry: the gauge counts it.
      const [other] = await queue.claimBatch("mail", 1);
      const { next } = await queue.ackClaimingNext(other!, new SettlementEffects().enqueue("mail", new Uint8Array([4])), { index: 0, reserve: () => true });
      expect(next).toBeDefined();
      const g3 = await collect();
      const jobs = (state: string) => reading(g3, "taquba.queue.jobs", { ...at, "taquba.job.state": state });
      expect([jobs("pending"), jobs("claimed"), jobs("done")]).toEqual([0, 1, 2]);
    } finally {
      await queue.close();
    }
  });

  it("observe the oldest pending job's age also when its record was paged out of memory", async () => {
    const clock = new MockClock(1_700_000_000_000);
    // A record cache that keeps nothing and a checkpoint every WAL object: the record is read back from the store.
    const queue = await Queue.open(new MemoryStore(), "paged-gauges", {
      clock,
      flushIntervalMs: 1,
      recordCacheBytes: 0,
      engineOptions: { checkpointWalObjects: 1 },
    });
    try {
      await queue.enqueue("mail", new Uint8Array(200).fill(7));
      clock.advance(2_000);
      await queue.flush();
      await queue.runMaintenance();
      await new Promise<void>((r) => setImmediate(r));
      await new Promise<void>((r) => setImmediate(r));
      const g = await collect();
      const at = { "taquba.store": "paged-gauges", "taquba.queue": "mail" };
      expect(reading(g, "taquba.queue.jobs", { ...at, "taquba.job.state": "pending" })).toBe(1);
      expect(reading(g, "taquba.queue.oldest_pending.age", at)).toBe(2);
    } finally {
      await queue.close();
    }
  });

  it("count the runs the memo-retention sweep skips because their marker is damaged, once each", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(new MemoryStore(), "retention", { clock, flushIntervalMs: 1 });
    const runtime = WorkflowRuntime.builder(queue, new MemoryStore(), { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook)
      .memoRetention(60_000)
      .logger({ error: () => {} })
      .build();
    const worker = runtime.spawn();
    try {
      await runtime.submit({ runId: "damaged", input: new Uint8Array([1]) });
      await runtime.wait("damaged");
      const [marker] = (await queue.kvScan("workflow/terminals/")).entries;
      await queue.kvPut(marker!.key, new Uint8Array([0xc1]));
      const before = reading(await collect(), "taquba.retention.unreadable");
      clock.advance(120_000);
      await runtime.sweepMemos();
      await runtime.sweepMemos();
      expect(reading(await collect(), "taquba.retention.unreadable", { "taquba.queue": "workflow-steps" }) - before).toBe(1);
    } finally {
      await worker.shutdown();
      await queue.close();
    }
  });
});
