/**
 * @module Reserved `workflow.*` headers: step jobs carry them, user headers
 * thread through, and a user header under the prefix is refused.
 */
import { describe, expect, it } from "vitest";
import { HEADER_RUN_ID, HEADER_STEP, RESERVED_HEADER_PREFIX, ReservedHeaderError, StepOutcome, type JobInfo } from "taquba";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

describe("reserved headers", () => {
  it("step jobs carry workflow.run_id and workflow.step; user headers thread through", async () => {
    const env = await openEnv(runnerOf(async (s) => (s.stepNumber < 2 ? StepOutcome.continueAfter(s.payload, 1_000) : StepOutcome.succeed(s.payload))));
    await env.runtime.submit({ input: enc("x"), runId: "h", options: { headers: { tenant: "acme", "x-trace": "t1" } } });
    const jobs: JobInfo[] = [];
    for (let step = 1; step <= 2; step++) {
      await until(async () => (await env.runtime.status("h"))?.step === step, `step ${step} scheduled`);
      const job = (await env.queue.view().listJobs("workflow-steps", "scheduled")).items[0]!;
      jobs.push(job);
      env.clock.advance(1_000);
    }
    for (const [i, job] of jobs.entries()) {
      expect(job.headers).toEqual({ tenant: "acme", "x-trace": "t1", [HEADER_RUN_ID]: "h", [HEADER_STEP]: String(i + 1) });
      // Idempotency: one pending or scheduled job per (run, step).
      expect(job.dedupKey).toBe(`run:h:${i + 1}`);
    }
    const end = await env.runtime.wait("h");
    expect(end.outcome!.headers).toEqual({ tenant: "acme", "x-trace": "t1" });
    await env.stop();
  });

  it("rejects any user header under the reserved prefix", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    expect(RESERVED_HEADER_PREFIX).toBe("workflow.");
    for (const h of ["workflow.run_id", "workflow.anything", "workflow."]) {
      await expect(env.runtime.submit({ input: enc("x"), options: { headers: { [h]: "v" } } })).rejects.toBeInstanceOf(ReservedHeaderError);
    }
    await env.runtime.submit({ input: enc("x"), options: { headers: { "workflowish.ok": "v", "Workflow.Case": "v" } } });
    await env.stop();
  });
});
