/**
 * @module The quick-start flow as the README shows it.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

describe("quick start", () => {
  it("runs the README's echo runner end to end with the system clock", async () => {
    const echo: StepRunner = { runStep: async (step) => StepOutcome.succeed(step.payload) };
    const store = new MemoryStore();
    const queue = await Queue.open(store, "demo");
    const runtime = WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook).build();
    const worker = runtime.spawn();
    const outcome = await runtime.submit({ input: new TextEncoder().encode("hello") });
    expect(outcome.newlySubmitted).toBe(true);
    const end = await runtime.wait(outcome.runId);
    expect(new TextDecoder().decode(end.outcome!.result)).toBe("hello");
    await worker.shutdown();
    await queue.close();
  });
});
