/**
 * @module `schedules.upsert` reads each field of the schedule, and of its
 * run, once: a getter that answers differently on a second read cannot
 * pass the checks with one value and be kept with another, and one that
 * throws (or a revoked Proxy) is a `ValidationError` naming what could not
 * be read, with nothing written.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepOutcome, ValidationError, WorkflowRuntime, type ScheduleSpec } from "../../runtime/index.js";
import { enc } from "../workflow/helpers.js";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

async function openRuntime() {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "app", { clock: new MockClock(Date.parse("2026-01-05T00:00:30Z")), flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s: { payload: Uint8Array }) => StepOutcome.succeed(s.payload) }, NoopTerminalHook)
    .logger({ error: () => undefined })
    .build();
  stops.push(() => queue.close());
  return runtime;
}

/** An object whose `field` answers `first` on its first read and `later` on every read after. */
function changing<T extends object>(base: T, field: string, first: unknown, later: unknown): T {
  let reads = 0;
  return Object.defineProperty({ ...base }, field, { enumerable: true, get: () => (reads++ === 0 ? first : later) });
}

describe("schedules.upsert reads a schedule once", () => {
  it("keeps the cron and the input it checked, whatever a getter answers later", async () => {
    const runtime = await openRuntime();
    const spec = changing({ id: "s1", run: { input: enc("checked") } } as unknown as ScheduleSpec, "cron", "*/5 * * * *", "not a cron");
    const info = await runtime.schedules.upsert(spec);
    expect(info.cron).toBe("*/5 * * * *");
    const run = changing({ input: enc("checked") }, "input", enc("checked"), "not bytes");
    const again = await runtime.schedules.upsert({ id: "s2", cron: "* * * * *", run } as ScheduleSpec);
    expect(again.id).toBe("s2");
    expect((await runtime.schedules.list()).map((s) => s.cron).sort()).toEqual(["* * * * *", "*/5 * * * *"]);
  });

  it("a getter that throws, or a revoked Proxy, is a ValidationError naming it, and nothing is written", async () => {
    const runtime = await openRuntime();
    const throwing = Object.defineProperty({ id: "s1", run: { input: enc("x") } }, "cron", {
      enumerable: true,
      get: () => {
        throw new Error("no cron today");
      },
    }) as unknown as ScheduleSpec;
    const err = await runtime.schedules.upsert(throwing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/reading cron threw: no cron today/);
    const { proxy, revoke } = Proxy.revocable({ id: "s2", cron: "* * * * *", run: { input: enc("x") } }, {});
    revoke();
    const revoked = await runtime.schedules.upsert(proxy as ScheduleSpec).catch((e: unknown) => e);
    expect(revoked).toBeInstanceOf(ValidationError);
    expect((revoked as Error).message).toMatch(/a schedule must be an object with id, cron and run/);
    const { proxy: runProxy, revoke: revokeRun } = Proxy.revocable({ input: enc("x") }, {});
    revokeRun();
    const revokedRun = await runtime.schedules.upsert({ id: "s3", cron: "* * * * *", run: runProxy } as ScheduleSpec).catch((e: unknown) => e);
    expect(revokedRun).toBeInstanceOf(ValidationError);
    expect((revokedRun as Error).message).toMatch(/run must be an object/);
    expect(await runtime.schedules.list()).toEqual([]);
  });

  it("reads its run's options, their flow and debounce, and catchUp once: the values checked are the values kept", async () => {
    const runtime = await openRuntime();
    const options = changing({ maxAttemptsPerStep: 2 }, "priority", 3, 1.5);
    const flow = changing({}, "rule", "r", "");
    const catchUp = changing({}, "allWithinMs", 60_000, -1);
    const info = await runtime.schedules.upsert({
      id: "s1",
      cron: "* * * * *",
      catchUp: catchUp as never,
      run: { input: enc("x"), options: Object.defineProperties({ flow }, Object.getOwnPropertyDescriptors(options)) as never },
    } as ScheduleSpec);
    expect(info.id).toBe("s1");
    expect((await runtime.schedules.list()).map((s) => s.id)).toEqual(["s1"]);
  });

  it("a getter that throws, or a revoked Proxy, in its run's options or catchUp is a ValidationError naming it, and nothing is written", async () => {
    const runtime = await openRuntime();
    const throwingPriority = Object.defineProperty({}, "priority", {
      enumerable: true,
      get: () => {
        throw new Error("no priority today");
      },
    });
    const gone = () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    };
    const cases: [unknown, RegExp][] = [
      [{ options: throwingPriority }, /reading run\.options\.priority threw: no priority today/],
      [{ options: gone() }, /run\.options must be an object, got a revoked Proxy/],
      [{ options: { flow: gone() } }, /run\.options\.flow must be an object, got a revoked Proxy/],
      [{ options: { debounce: gone() } }, /run\.options\.debounce must be an object, got a revoked Proxy/],
    ];
    for (const [run, says] of cases) {
      const err = await runtime.schedules
        .upsert({ id: "s1", cron: "* * * * *", run: { input: enc("x"), ...(run as object) } } as ScheduleSpec)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect([(err as Error).message, ...((err as ValidationError).issues ?? [])].join("\n")).toMatch(says);
    }
    const err = await runtime.schedules
      .upsert({ id: "s1", cron: "* * * * *", catchUp: gone() as never, run: { input: enc("x") } } as ScheduleSpec)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect([(err as Error).message, ...((err as ValidationError).issues ?? [])].join("\n")).toMatch(/catchUp must be an object, got a revoked Proxy/);
    expect(await runtime.schedules.list()).toEqual([]);
  });
});
