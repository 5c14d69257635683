/**
 * @module A damaged schedule record (bytes that are no record, a number out
 * of its range) among good ones: the scheduler reports it by its schedule
 * and goes on ticking the others; `get` of it is a `StoreCorruptedError`.
 * Before, the record's decode threw out of the scheduler's listing of
 * schedules, which stopped the scheduler, and every schedule with it,
 * until the next start.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepOutcome, StoreCorruptedError, WorkflowRuntime, type RunnerHandle } from "taquba";
import { scheduleKey } from "../../runtime/workflow/schedules/schedule-record.js";
import { enc, until } from "../workflow/helpers.js";

const T0 = Date.parse("2026-01-05T00:00:30Z");
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const DAMAGE: [string, (bytes: Uint8Array) => Uint8Array][] = [
  ["bytes that are no record", () => new Uint8Array([0xc1, 0x00])],
  ["a step priority below 0", (bytes) => pack({ ...(unpack(bytes) as Record<string, unknown>), priority: -1 })],
  // Past the last instant a Date holds, the schedule's cron finds no next tick: it never ticked, and nothing said why.
  ["a last tick time past the last instant a Date holds", (bytes) => pack({ ...(unpack(bytes) as Record<string, unknown>), lastTickMs: 8.64e15 + 1 })],
  ["a last tick time of 2^53-1", (bytes) => pack({ ...(unpack(bytes) as Record<string, unknown>), lastTickMs: Number.MAX_SAFE_INTEGER })],
];

describe("a damaged schedule record", () => {
  for (const [what, damage] of DAMAGE) {
    it(`holding ${what} is reported, and the other schedules go on ticking`, async () => {
      const store = new MemoryStore();
      const clock = new MockClock(T0);
      const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
      const started: string[] = [];
      const logged: { schedule?: string }[] = [];
      const runtime = WorkflowRuntime.builder(
        queue,
        store,
        {
          runStep: async (s) => {
            if (s.stepNumber === 0) started.push(s.runId);
            return StepOutcome.succeed(s.payload);
          },
        },
        NoopTerminalHook,
      )
        .logger({ error: (o) => logged.push(o as { schedule?: string }) })
        .build();
      let worker: RunnerHandle | undefined;
      closers.push(async () => {
        await worker?.shutdown();
        await queue.close();
      });
      await runtime.schedules.upsert({ id: "aaa", cron: "* * * * *", run: { input: enc("a"), options: { priority: 2 } } });
      await runtime.schedules.upsert({ id: "zzz", cron: "* * * * *", run: { input: enc("z") } });
      const key = scheduleKey("workflow-steps", "aaa");
      const bytes = await queue.kvGet(key);
      expect(bytes).not.toBeNull();
      await queue.kvPut(key, damage(bytes!));
      await expect(runtime.schedules.get("aaa")).rejects.toBeInstanceOf(StoreCorruptedError);

      worker = runtime.spawn();
      clock.set(T0 + 30_000);
      await until(() => started.includes(`sched-zzz-${T0 + 30_000}`), "zzz's first tick");
      clock.set(T0 + 90_000);
      await until(() => started.includes(`sched-zzz-${T0 + 90_000}`), "zzz's second tick");
      expect(started.some((r) => r.startsWith("sched-aaa-"))).toBe(false);
      expect(logged.some((o) => o.schedule === "aaa")).toBe(true);

      // The way out the report names: remove it (without reading the record) and upsert it again.
      expect(await runtime.schedules.remove("aaa")).toBe(true);
      expect(await runtime.schedules.get("aaa")).toBeNull();
      await runtime.schedules.upsert({ id: "aaa", cron: "* * * * *", run: { input: enc("a") } });
      clock.set(T0 + 150_000);
      await until(() => started.includes(`sched-aaa-${T0 + 150_000}`), "aaa's tick after its upsert");
    });
  }
});
