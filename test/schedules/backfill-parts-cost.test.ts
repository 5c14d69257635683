/**
 * @module A backfill sent in parts (as a client sends it: the same end,
 * each part starting where the last stopped) lists the range's ticks once
 * for its check, then only each part's ticks: listing the whole rest of
 * the range for every part made a long backfill quadratic on the owner.
 * Counted as calls into the cron library, which is the cost.
 */
import { Cron } from "croner";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, ValidationError, WorkflowRuntime } from "taquba";
import { appRunner, STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T12:00:00Z");
const enc = (s: string) => new TextEncoder().encode(s);

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a backfill in parts", () => {
  it("lists the range's ticks about twice in all, not once per part, and still starts every tick once", async () => {
    const clock = new MockClock(T0);
    const store = new MemoryStore();
    const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
    try {
      const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
      await runtime.schedules.upsert({ id: "m", cron: "* * * * *", run: { input: enc("{}") } });
      const ticks = 600;
      const from = T0 - ticks * MIN;
      const to = T0 - 1;
      const steps = vi.spyOn(Cron.prototype, "nextRun");
      const fired: number[] = [];
      for (let f: number | null = from; f !== null; ) {
        const part = await runtime.schedules.backfillPart("m", f, to, 25);
        fired.push(...part.fires.filter((x) => x.newlySubmitted).map((x) => x.tickMs));
        f = part.nextFromMs;
      }
      expect(fired).toEqual(Array.from({ length: ticks }, (_, i) => from + i * MIN));
      // Once for the range's check, once more for the parts (plus one past each).
      expect(steps.mock.calls.length).toBeLessThanOrEqual(2 * ticks + 2 * (ticks / 25) + 10);
      // A changed range is checked whole again: one too long is still refused.
      steps.mockClear();
      await expect(runtime.schedules.backfillPart("m", T0 - 20_000 * MIN, to, 25)).rejects.toBeInstanceOf(ValidationError);
      // A part within the checked range but of a schedule whose expression changed is checked whole too.
      await runtime.schedules.backfillPart("m", from, to, 25);
      await runtime.schedules.upsert({ id: "m", cron: "*/2 * * * *", run: { input: enc("{}") } });
      const after = await runtime.schedules.backfillPart("m", from + MIN, to, 1000);
      expect(after.nextFromMs).toBeNull();
      expect(after.fires.every((x) => (x.tickMs - from) % (2 * MIN) === 0)).toBe(true);
    } finally {
      await queue.close();
    }
  }, 120_000);
});
