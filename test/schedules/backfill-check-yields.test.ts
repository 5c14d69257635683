/**
 * @module A backfill's check of its whole range lists the range's ticks a
 * few at a time, with turns of the event loop between: in one go it held
 * the owner's loop for seconds for a sparse expression (its lease renewals
 * and timers with it). Measured as calls into the cron library between two
 * turns of the loop, not as time; the ticks started and the refusals are
 * the same as before.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { Cron } from "croner";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, ValidationError, WorkflowRuntime } from "taquba";
import { MAX_BACKFILL_TICKS } from "../../runtime/workflow/schedules/schedules.js";
import { TICKS_PER_TURN } from "../../runtime/workflow/schedules/backfill-ticks.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T12:00:00Z");
const enc = (s: string) => new TextEncoder().encode(s);

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * Runs `work` beside a loop that notes the cron library's call count at
 * every turn of the event loop; answers `work`'s outcome and the most calls
 * made between two notes (the longest stretch the loop was held).
 */
async function longestSlice<T>(work: () => Promise<T>): Promise<{ outcome: PromiseSettledResult<T>; calls: number; longest: number }> {
  const steps = vi.spyOn(Cron.prototype, "nextRun");
  let done = false;
  let longest = 0;
  let last = 0;
  const note = () => {
    longest = Math.max(longest, steps.mock.calls.length - last);
    last = steps.mock.calls.length;
  };
  const watcher = (async () => {
    while (!done) {
      note();
      await nextTurn();
    }
  })();
  const [outcome] = await Promise.allSettled([work()]);
  note();
  done = true;
  await watcher;
  return { outcome, calls: steps.mock.calls.length, longest };
}

async function withRuntime(body: (runtime: WorkflowRuntime) => Promise<void>): Promise<void> {
  const clock = new MockClock(T0);
  const store = new MemoryStore();
  const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
  try {
    await body(WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build());
  } finally {
    await queue.close();
  }
}

/** At most two calls into croner per tick (its zone's path beside the fixed offset's), and a few for the record. */
const MOST_CALLS_PER_SLICE = 2 * TICKS_PER_TURN + 4;

describe("a backfill's check of its range", () => {
  it("refuses a range one tick too long with the loop turning every few ticks, starting nothing", async () => {
    await withRuntime(async (runtime) => {
      await runtime.schedules.upsert({ id: "m", cron: "* * * * *", run: { input: enc("{}") } });
      const from = T0 - (MAX_BACKFILL_TICKS + 1) * MIN;
      const to = T0 - MIN;
      const { outcome, calls, longest } = await longestSlice(() => runtime.schedules.backfill("m", from, to));
      expect(outcome.status).toBe("rejected");
      const err = (outcome as PromiseRejectedResult).reason as Error;
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.message).toBe(`backfill of schedule "m" covers more than ${MAX_BACKFILL_TICKS} ticks; split the range`);
      // The whole range was looked at, never more than a slice of it in one stretch.
      expect(calls).toBeGreaterThan(MAX_BACKFILL_TICKS);
      expect(longest).toBeLessThanOrEqual(MOST_CALLS_PER_SLICE);
      expect((await runtime.schedules.get("m"))?.lastRunId ?? null).toBeNull();
    });
  }, 120_000);

  it("takes a range of exactly the most ticks, part by part, with the same ticks as before", async () => {
    await withRuntime(async (runtime) => {
      await runtime.schedules.upsert({ id: "m", cron: "* * * * *", run: { input: enc("{}") } });
      const from = T0 - MAX_BACKFILL_TICKS * MIN;
      const to = T0 - MIN;
      const first = await longestSlice(() => runtime.schedules.backfillPart("m", from, to, 25));
      expect(first.outcome.status).toBe("fulfilled");
      expect(first.longest).toBeLessThanOrEqual(MOST_CALLS_PER_SLICE);
      const part = (first.outcome as PromiseFulfilledResult<Awaited<ReturnType<typeof runtime.schedules.backfillPart>>>).value;
      expect(part.fires.map((f) => f.tickMs)).toEqual(Array.from({ length: 25 }, (_, i) => from + i * MIN));
      expect(part.nextFromMs).toBe(from + 25 * MIN);
      // The next part, within the range checked: only its own ticks (and one past them).
      const next = await runtime.schedules.backfillPart("m", part.nextFromMs as number, to, 25);
      expect(next.fires.map((f) => f.tickMs)).toEqual(Array.from({ length: 25 }, (_, i) => from + (25 + i) * MIN));
      expect(next.fires.every((f) => f.newlySubmitted)).toBe(true);
      expect(next.nextFromMs).toBe(from + 50 * MIN);
    });
  }, 120_000);

  it("of a sparse expression starts the ticks of the calendar, the loop turning between a few of them", async () => {
    await withRuntime(async (runtime) => {
      // croner's OR of the day fields: the 29th of February, or any Monday of February.
      await runtime.schedules.upsert({ id: "feb", cron: "0 0 29 2 1", run: { input: enc("{}") } });
      const from = Date.UTC(1990, 0, 1);
      const to = Date.UTC(2030, 0, 1);
      const expected: number[] = [];
      for (let y = 1990; y < 2030; y++) {
        for (let d = 1; d <= 29; d++) {
          const t = Date.UTC(y, 1, d);
          if (new Date(t).getUTCMonth() !== 1) continue;
          if (d === 29 || new Date(t).getUTCDay() === 1) expected.push(t);
        }
      }
      expect(expected.length).toBeGreaterThan(4 * TICKS_PER_TURN);
      const { outcome, longest } = await longestSlice(() => runtime.schedules.backfill("feb", from, to));
      expect(outcome.status).toBe("fulfilled");
      const fires = (outcome as PromiseFulfilledResult<Awaited<ReturnType<typeof runtime.schedules.backfill>>>).value;
      expect(fires.map((f) => f.tickMs)).toEqual(expected);
      expect(fires.every((f) => f.newlySubmitted)).toBe(true);
      expect(longest).toBeLessThanOrEqual(MOST_CALLS_PER_SLICE);
    });
  }, 120_000);
});
