/**
 * @module A client's backfill goes to the owner in parts: each request
 * starts at most `BACKFILL_PART_TICKS` ticks, or fewer once about 10 s of
 * the owner's clock went by, and answers before the next is sent, so no
 * request holds the owner's inbox for a whole long range or outlasts the
 * client's timeout. The caller still gets every tick's fire, in order; a
 * backfill sent again starts nothing twice; a range the owner refuses is
 * refused before any part starts a run.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, TaqubaClient, ValidationError, WorkflowRuntime, serveClients, type ClientInbox } from "taquba";
import { BACKFILL_PART_BUDGET_MS, BACKFILL_PART_TICKS } from "../../runtime/workflow/schedules/schedules.js";
import { tickRunId } from "../../runtime/workflow/schedules/schedule-record.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T12:00:00Z");
const enc = (s: string) => new TextEncoder().encode(s);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

async function owner(clock: MockClock) {
  const store = new MemoryStore();
  const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const inbox: ClientInbox = serveClients(queue, runtime, { store, listIntervalMs: 10 });
  const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, pollIntervalMs: 200 });
  // The inbox lists on the owner's clock, which is a mock: list every 20 ms of real time.
  const pump = setInterval(() => void inbox.drain().catch(() => undefined), 20);
  stops.push(async () => {
    clearInterval(pump);
    await inbox.stop();
    await queue.close();
  });
  stops.push(() => client.close());
  return { runtime, inbox, client };
}

describe("a client's backfill", () => {
  it("is applied in parts of at most BACKFILL_PART_TICKS ticks, and answers every tick in order", async () => {
    const clock = new MockClock(T0);
    const { runtime, inbox, client } = await owner(clock);
    await runtime.schedules.upsert({ id: "hourly", cron: "* * * * *", run: { input: enc("x") } });
    const ticks = 2 * BACKFILL_PART_TICKS + 10;
    const from = T0 - ticks * MIN;
    const before = inbox.stats.applied;
    const fires = await client.backfillSchedule("hourly", from, T0 - 1);
    expect(fires.map((f) => f.tickMs)).toEqual(Array.from({ length: ticks }, (_, i) => from + i * MIN));
    expect(fires.every((f) => f.newlySubmitted && f.runId === tickRunId("hourly", f.tickMs))).toBe(true);
    // One request per part.
    expect(inbox.stats.applied - before).toBe(3);
    for (const f of fires) expect(await runtime.status(f.runId), f.runId).not.toBeNull();
    // Sent again: every run exists, none starts twice.
    const again = await client.backfillSchedule("hourly", from, T0 - 1);
    expect(again.map((f) => [f.tickMs, f.newlySubmitted])).toEqual(fires.map((f) => [f.tickMs, false]));
  }, 60_000);

  it("ends a part early once the owner spent its time budget on it", async () => {
    const clock = new MockClock(T0);
    const { runtime, inbox, client } = await owner(clock);
    // Each tick's input takes 4 s of the owner's clock: a part ends after the tick that passes the budget.
    const perTick = 4_000;
    await runtime.schedules.upsert({
      id: "slow",
      cron: "* * * * *",
      run: {
        input: () => {
          clock.advance(perTick);
          return enc("x");
        },
      },
    });
    const before = inbox.stats.applied;
    const fires = await client.backfillSchedule("slow", T0 - 9 * MIN, T0 - 1);
    expect(fires).toHaveLength(9);
    const perPart = Math.ceil(BACKFILL_PART_BUDGET_MS / perTick);
    expect(inbox.stats.applied - before).toBe(Math.ceil(9 / perPart));
  }, 60_000);

  it("a range the owner refuses starts nothing", async () => {
    const clock = new MockClock(T0);
    const { runtime, client } = await owner(clock);
    await runtime.schedules.upsert({ id: "every-second", cron: "* * * * * *", run: { input: enc("x") } });
    await expect(client.backfillSchedule("every-second", T0 - 3 * 3_600_000, T0)).rejects.toThrow(ValidationError);
    expect((await runtime.listRuns({ limit: 5 })).runs).toEqual([]);
  }, 60_000);
});
