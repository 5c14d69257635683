/**
 * @module Bad timeouts of the waits end at once in a `ValidationError`,
 * delivered as a rejected promise: `Queue.waitForCompletion` waited
 * forever for a `timeoutMs` of NaN, Infinity or a string (which even made
 * the deadline text), and `WorkflowRuntime.waitTimeout` threw at the call
 * instead of rejecting, so a `.catch` on its promise missed the error.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, ValidationError, WorkflowRuntime } from "taquba";

describe("wait timeouts", () => {
  it("waitForCompletion refuses a timeout that is not 0 to 10 years of ms, and times out at 0", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    const { jobId } = await queue.enqueue("jobs", new Uint8Array(1));
    for (const timeoutMs of [Number.NaN, Number.POSITIVE_INFINITY, 1e30, -5, "5" as unknown as number]) {
      await expect(queue.waitForCompletion(jobId, { timeoutMs }), String(timeoutMs)).rejects.toThrow(ValidationError);
    }
    await expect(queue.waitForCompletion(jobId, null as unknown as { timeoutMs?: number })).rejects.toThrow(ValidationError);
    expect(await queue.waitForCompletion(jobId, { timeoutMs: 0 })).toEqual({ kind: "timed_out" });
    await queue.close();
  });

  it("waitTimeout rejects its promise on a bad timeout or run id instead of throwing at the call", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q");
    const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
    for (const [runId, timeoutMs] of [
      ["r1", Number.NaN],
      ["r1", -1],
      ["r1", "10" as unknown as number],
      ["not an id", 10],
    ] as const) {
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = runtime.waitTimeout(runId, timeoutMs);
      }).not.toThrow();
      await expect(promise).rejects.toBeInstanceOf(Error);
      await expect(promise).rejects.toMatchObject({ retryable: false });
    }
    await runtime.close();
    await queue.close();
  });
});
