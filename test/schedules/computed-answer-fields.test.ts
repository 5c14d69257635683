/**
 * @module What a schedule's input handler answers (`{ input, flow,
 * debounce }`) refuses a field that is none of its own, and a misspelt
 * field of its flow or debounce: the tick starts no run, and the schedule
 * records the failure naming the field and the close name (a misspelt
 * `flow` used to start the run under the schedule's own flow in silence).
 * A trigger reports it to its caller. Spelt right, the answer is taken.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, ScheduleInputError, StepOutcome, WorkflowRuntime, type RunnerHandle } from "../../runtime/index.js";
import { dec, enc, until } from "../workflow/helpers.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T00:00:30Z");
const tick = (i: number) => T0 + 30_000 + i * MIN;
const runOf = (t: number) => `sched-report-${t}`;

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

async function openApp(answers: unknown[]) {
  const store = new MemoryStore();
  const clock = new MockClock(T0);
  const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
  const inputs = new Map<string, string>();
  const runner = {
    runStep: async (s: { runId: string; payload: Uint8Array }) => {
      inputs.set(s.runId, dec(s.payload));
      return StepOutcome.succeed(s.payload);
    },
  };
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook)
    .logger({ error: () => undefined })
    .build();
  let n = 0;
  await runtime.schedules.upsert({ id: "report", cron: "* * * * *", run: { input: () => answers[n++] as Uint8Array } });
  const worker: RunnerHandle = runtime.spawn();
  stops.push(async () => {
    await worker.shutdown();
    await queue.close();
  });
  return { clock, runtime, inputs };
}

describe("a schedule input handler's answer", () => {
  it("with a misspelt field, or a misspelt field of its flow or debounce, starts no run and records the field", async () => {
    const { clock, runtime, inputs } = await openApp([
      { input: enc("a"), fow: { rule: "reports" } },
      { input: enc("b"), flow: { rule: "reports", concurencyKey: "eu" } },
      { input: enc("c"), debounce: { key: "k", periodMS: 1000 } },
      { input: enc("d"), flow: { rule: "reports", concurrencyKey: "eu" } },
    ]);
    const expected = [
      /its input handler's answer has a field that is not an option:\n {2}- answer\.fow is not an option \(misspelt\?\); the options are input, flow, debounce; did you mean flow\?/,
      /answer\.flow\.concurencyKey is not an option \(misspelt\?\); the options are rule, concurrencyKey, rateKey; did you mean concurrencyKey\?/,
      /answer\.debounce\.periodMS is not an option \(misspelt\?\); the options are key, periodMs; did you mean periodMs\?/,
    ];
    for (const [i, message] of expected.entries()) {
      clock.set(tick(i));
      await until(async () => (await runtime.schedules.get("report"))?.lastFailure?.tickMs === tick(i), `the failure of tick ${i}`);
      expect((await runtime.schedules.get("report"))!.lastFailure!.error).toMatch(message);
      expect(await runtime.status(runOf(tick(i)))).toBeNull();
    }
    // Spelt right: the tick's run starts with the answer's input.
    clock.set(tick(3));
    await until(() => inputs.has(runOf(tick(3))), "tick 3's run");
    expect(inputs.get(runOf(tick(3)))).toBe("d");
    expect(inputs.size).toBe(1);
  });

  it("with a misspelt field: a trigger rejects with ScheduleInputError naming it, and starts nothing", async () => {
    const { runtime } = await openApp([{ input: enc("a"), debouce: { key: "k", periodMs: 10 } }]);
    const err = await runtime.schedules.trigger("report").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScheduleInputError);
    expect((err as Error).message).toMatch(/answer\.debouce is not an option .*did you mean debounce\?/);
    expect((await runtime.view().listRuns({})).runs).toEqual([]);
  });
});
