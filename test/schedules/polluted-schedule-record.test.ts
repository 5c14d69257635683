/**
 * @module A schedule record decoded while `Object.prototype` holds one of
 * the names its encoding leaves out when absent (a flow, a debounce, the
 * last failure or trigger): the schedule reads as upserted, and its ticks
 * submit runs without the prototype's flow rule or debounce. Before, such a
 * value of the wrong shape made the record look corrupted.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "../../runtime/index.js";
import { whilePolluted } from "../support/polluted-prototype.js";
import { enc } from "../workflow/helpers.js";

const T0 = Date.parse("2026-01-05T00:00:30Z");
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

async function openApp() {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "app", { clock: new MockClock(T0), flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook)
    .logger({ error: () => undefined })
    .build();
  closers.push(() => queue.close());
  return runtime;
}

const POLLUTANTS: Record<string, unknown>[] = [{ flow: 5 }, { debounce: 5 }, { lastFailure: 5 }, { lastTrigger: 5 }, { computed: 5 }];

describe("schedule records under a polluted Object.prototype", () => {
  for (const fields of POLLUTANTS) {
    it(`a schedule reads as upserted while Object.prototype holds ${Object.keys(fields)[0]}`, async () => {
      const runtime = await openApp();
      const upserted = await runtime.schedules.upsert({ id: "nightly", cron: "0 0 * * *", run: { input: enc("tick") } });
      await whilePolluted(fields, async () => {
        expect(await runtime.schedules.get("nightly")).toEqual(upserted);
        expect(await runtime.schedules.list()).toEqual([upserted]);
      });
    });
  }
});
