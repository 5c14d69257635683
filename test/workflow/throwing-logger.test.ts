/**
 * @module A logger that throws on every call (a broken transport, a full
 * disk): logging is best effort, so retries, permanent failures, dead
 * letters and successes still end each run as they would with a working one.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepError, StepOutcome, WorkflowRuntime, type Logger } from "taquba";
import { advanceUntil, dec, enc } from "./helpers.js";

const boom = (): never => {
  throw new Error("log transport down");
};
const throwing: Logger = { debug: boom, info: boom, warn: boom, error: boom };

describe("a logger that throws", () => {
  it("never changes how a run ends", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const store = new MemoryStore();
    const queue = await Queue.open(store, "wf", {
      clock,
      flushIntervalMs: 1,
      logger: throwing,
      queueConfigs: { "workflow-steps": { backoff: { baseMs: 1000, maxMs: 1000 }, maxAttempts: 2 } },
    });
    const runtime = WorkflowRuntime.builder(
      queue,
      store,
      {
        async runStep(s) {
          const input = dec(s.payload);
          if (input === "retry-once" && s.attempt === 1) throw StepError.transient(new Error("flaky"));
          if (input === "permanent") throw StepError.permanent(new Error("no such order"));
          if (input === "always") throw StepError.transient(new Error("down"));
          return StepOutcome.succeed(enc(`ok:${input}`));
        },
      },
      NoopTerminalHook,
    )
      .logger(throwing)
      .build();
    const worker = runtime.spawn();
    for (const id of ["retry-once", "permanent", "always", "plain"]) await runtime.submit({ input: enc(id), runId: id });
    const ended = async () => {
      for (const id of ["retry-once", "permanent", "always", "plain"]) if ((await runtime.status(id))?.state !== "terminated") return false;
      return true;
    };
    // Past the 1 s retry backoff, well short of any step lease.
    await advanceUntil(clock, clock.now() + 5_000, ended, "every run ended");
    expect(await runtime.status("retry-once")).toMatchObject({ status: "succeeded" });
    expect(await runtime.status("plain")).toMatchObject({ status: "succeeded" });
    expect(await runtime.status("permanent")).toMatchObject({ status: "failed" });
    expect(await runtime.status("always")).toMatchObject({ status: "failed" });
    await worker.shutdown();
    await queue.close();
  });
});
