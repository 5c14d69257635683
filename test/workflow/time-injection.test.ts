/**
 * @module Time injection: submit times, delays and `waitTimeout` follow the
 * queue's clock, or the builder's when one is given.
 */
import { describe, expect, it } from "vitest";
import { MockClock, StepOutcome } from "taquba";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

describe("time injection", () => {
  it("inherits the queue's clock for submit times and delays", async () => {
    const env = await openEnv(runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 5_000) : StepOutcome.succeed(s.payload))));
    const t0 = env.clock.now();
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(async () => (await env.runtime.status("r"))?.step === 1, "scheduled");
    const job = (await env.queue.view().listJobs("workflow-steps", "scheduled")).items[0]!;
    expect(job.runAt).toBe(t0 + 5_000);
    const { decodeRunRecord } = await import("../../runtime/workflow/records/records.js");
    expect(decodeRunRecord((await env.queue.kvGet("workflow/runs/workflow-steps/r"))!, "k").submittedAtMs).toBe(t0);
    env.clock.advance(5_000);
    expect((await env.runtime.wait("r")).termination.terminatedAtMs).toBe(t0 + 5_000);
    await env.stop();
  });

  it("uses the builder's clock when one is given", async () => {
    const own = new MockClock(2_000_000_000_000);
    const env = await openEnv(
      runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 1_000) : StepOutcome.succeed(s.payload))),
      {
        configure: (b) => b.clock(own),
      },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(async () => (await env.runtime.status("r"))?.step === 1, "scheduled");
    const job = (await env.queue.view().listJobs("workflow-steps", "scheduled")).items[0]!;
    expect(job.runAt).toBe(own.now() + 1_000);
    await env.stop();
  });

  it("waitTimeout is bounded by the runtime clock", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.continueAfter(s.payload, 3_600_000)));
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    const pending = env.runtime.waitTimeout("r", 10_000);
    await until(() => env.clock.pendingTimers > 0, "wait armed");
    env.clock.advance(10_000);
    expect(await pending).toBeNull();
    await env.stop();
  });
});
