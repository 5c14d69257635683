/**
 * @module Attacks on schedule backfills: backfills of overlapping ranges
 * sent at once start each tick's run once; a backfill cut short by a store
 * that fails part way (as an owner that died mid-backfill leaves it) and
 * sent again to a new owner starts the rest, and nothing twice; absurd
 * ranges change nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, ValidationError, WorkflowRuntime, type ObjectStore, type PutOptions } from "taquba";
import { tickRunId } from "../../runtime/workflow/schedules/schedule-record.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";
import { testRandom } from "../support/seed.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T12:00:00Z");
const enc = (s: string) => new TextEncoder().encode(s);
const quiet = { error: () => undefined, warn: () => undefined, info: () => undefined };

/** A store whose puts fail for good once `budget` more of them went through, as a process dying part way. */
class PutBudget implements ObjectStore {
  budget = Number.POSITIVE_INFINITY;
  constructor(readonly inner: ObjectStore) {}
  get(key: string) {
    return this.inner.get(key);
  }
  put(key: string, body: Uint8Array, opts?: PutOptions) {
    if (this.budget-- <= 0) return Promise.reject(new Error("the process died"));
    return this.inner.put(key, body, opts);
  }
  delete(key: string) {
    return this.inner.delete(key);
  }
  list(prefix: string, opts?: { startAfter?: string }) {
    return this.inner.list(prefix, opts);
  }
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
});

async function owner(store: ObjectStore, clock: MockClock) {
  const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0, logger: quiet });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).logger(quiet).build();
  stops.push(() => queue.close());
  return { queue, runtime };
}

describe("schedule backfills, attacked", () => {
  it("overlapping backfills sent at once start each tick's run once", async () => {
    const r = testRandom("backfill overlap");
    const clock = new MockClock(T0);
    const { runtime } = await owner(new MemoryStore(), clock);
    await runtime.schedules.upsert({ id: "m", cron: "* * * * *", run: { input: enc("{}") } });
    const ticks = Array.from({ length: 60 }, (_, i) => T0 - 60 * MIN + i * MIN);
    const ranges = Array.from({ length: 5 }, () => {
      const a = r.int(60);
      const b = a + r.int(60 - a);
      return [ticks[a]!, ticks[b]! + r.int(MIN)] as const;
    });
    const answers = await Promise.all(ranges.map(([from, to]) => runtime.schedules.backfill("m", from, to)));
    const started = new Map<number, number>();
    for (const fires of answers) for (const f of fires) if (f.newlySubmitted) started.set(f.tickMs, (started.get(f.tickMs) ?? 0) + 1);
    expect(
      [...started.values()].filter((n) => n > 1),
      "ticks started twice",
    ).toEqual([]);
    const covered = new Set(answers.flat().map((f) => f.tickMs));
    expect(new Set(started.keys()), "every tick covered was started by one of them").toEqual(covered);
    for (const t of covered) expect(await runtime.status(tickRunId("m", t)), String(t)).not.toBeNull();
  }, 30_000);

  it("a backfill cut short by store failures, sent again to a new owner, starts the rest and nothing twice", async () => {
    const r = testRandom("backfill cut short");
    const inner = new MemoryStore();
    const clock = new MockClock(T0);
    const dying = new PutBudget(inner);
    const first = await owner(dying, clock);
    await first.runtime.schedules.upsert({ id: "m", cron: "* * * * *", run: { input: enc("{}") } });
    await first.queue.flush();
    const from = T0 - 40 * MIN;
    const to = T0 - MIN;
    // The store fails for good part way through: the backfill rejects with some ticks started.
    dying.budget = 3 + r.int(20);
    await expect(first.runtime.schedules.backfill("m", from, to)).rejects.toThrow();
    // A new owner over the same store (the first is abandoned), and the backfill sent again.
    const second = await owner(inner, clock);
    const again = await second.runtime.schedules.backfill("m", from, to);
    expect(again.map((f) => f.tickMs)).toEqual(Array.from({ length: 40 }, (_, i) => from + i * MIN));
    expect(
      again.some((f) => !f.newlySubmitted),
      "the first backfill started some ticks durably",
    ).toBe(true);
    expect(
      again.some((f) => f.newlySubmitted),
      "and left some",
    ).toBe(true);
    for (const f of again) expect(await second.runtime.status(f.runId), f.runId).not.toBeNull();
    // Sent a third time: every run is known, none starts.
    expect((await second.runtime.schedules.backfill("m", from, to)).filter((f) => f.newlySubmitted)).toEqual([]);
  }, 30_000);

  it("absurd ranges are refused and start nothing", async () => {
    const clock = new MockClock(T0);
    const { runtime } = await owner(new MemoryStore(), clock);
    await runtime.schedules.upsert({ id: "m", cron: "* * * * *", run: { input: enc("{}") } });
    for (const [a, b] of [
      [Number.NaN, T0],
      [T0, Number.POSITIVE_INFINITY],
      [-1, T0],
      [T0, 1e30],
      [T0, T0 - 1],
    ] as const) {
      await expect(runtime.schedules.backfill("m", a, b), `${a}..${b}`).rejects.toBeInstanceOf(ValidationError);
    }
    expect(await runtime.schedules.backfill("m", T0 + 1, T0 + MIN - 1)).toEqual([]);
  });
});
