/**
 * @module A typed child wait with a timeout (`timeout_ms` beside
 * `waits_for_child`, the `child-timeout` codegen fixture): the waiting step
 * is entered with `{ status: "timed_out", runId }` when the child has not
 * ended in time, may wait for the same child again, and gets its end when
 * it comes; the child runs once. On a `MockClock`.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepError, WorkflowDispatcher, WorkflowRuntime } from "taquba";
import { relay } from "../codegen/fixtures/child-timeout/expected/index.js";
import { until } from "../support/until.js";

const WAIT_MS = 60_000;

class Tasks implements relay.TaskRunHandler {
  holds = 0;
  async hold(p: relay.TaskRunInput, ctx: relay.TaskRunHoldContext): Promise<relay.TaskRunHoldTransition> {
    this.holds++;
    return ctx.next.finish.onSignal({ task: p.task }, null);
  }
  async finish(_p: null, ctx: relay.TaskRunFinishContext): Promise<relay.TaskRunFinishTransition> {
    if (ctx.signal === null) return ctx.cancel("never released");
    return ctx.succeed({ task: ctx.step.runId });
  }
}

class Relays implements relay.RelayRunHandler {
  readonly seen: string[] = [];
  async start(p: relay.RelayRunInput, ctx: relay.RelayRunStartContext): Promise<relay.RelayRunStartTransition> {
    const child = await ctx.workflows.relay.taskRun.start({ task: p.task });
    return child.onComplete(ctx.next.wait, { timeouts: 0 });
  }
  async wait(p: relay.RelayRunWaitPayload, ctx: relay.RelayRunWaitContext): Promise<relay.RelayRunWaitTransition> {
    const end = ctx.signal;
    // @ts-expect-error a bounded wait may have timed out, which has no finalStep: check the status first
    void end.finalStep;
    this.seen.push(`${end.status}:${end.runId}`);
    if (end.status === "timed_out") return ctx.workflows.relay.taskRun.child(end.runId).onComplete(ctx.next.wait, { timeouts: p.timeouts + 1 });
    if (end.status !== "succeeded") throw StepError.permanent(new Error(`the task ended ${end.status}`));
    return ctx.succeed({ task: end.result.task, timeouts: p.timeouts });
  }
}

describe("a typed child wait with a timeout", () => {
  it("enters the waiting step with timed_out, waits again for the same child, and gets its end once it comes", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "relay", { clock, flushIntervalMs: 1 });
    const tasks = new Tasks();
    const relays = new Relays();
    const dispatcher = relay.registerWorkflows(WorkflowDispatcher.builder(), { relayRun: relays, taskRun: tasks }).build();
    const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
      .logger({ error: () => undefined })
      .build();
    const worker = runtime.spawn();
    const client = relay.client(runtime);
    try {
      await client.relayRun.submit({ task: "t1" }, { runId: "r1" });
      await until("the parent waits for its held child", async () => (await runtime.status("r1"))?.step === 1 && (await runtime.status("r1-s0-0"))?.step === 1);
      for (let n = 1; n <= 2; n++) {
        clock.advance(WAIT_MS);
        await until(`timeout ${n} reached the parent, which waits again`, async () => (await runtime.status("r1"))?.step === 1 + n);
      }
      expect(relays.seen).toEqual(["timed_out:r1-s0-0", "timed_out:r1-s0-0"]);
      expect(await client.taskRun.signals.release({ task: "t1" }, {})).toBe("delivered");
      expect(await client.relayRun.wait("r1")).toMatchObject({ status: "succeeded", result: { task: "r1-s0-0", timeouts: 2 } });
      expect(relays.seen).toEqual(["timed_out:r1-s0-0", "timed_out:r1-s0-0", "succeeded:r1-s0-0"]);
      expect(tasks.holds).toBe(1);
    } finally {
      await worker.shutdown();
      await queue.close();
    }
  });
});
