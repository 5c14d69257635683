/**
 * @module A submission's run record keeps the fields a run seldom has (set
 * out of line by the submission): the step priority and attempts it was
 * submitted with come back on a step its run's records rebuild, a redriven
 * one, and a run submitted without them takes the queue's.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type Step, type StepRunner } from "taquba";
import { enc, openEnv, until, type Env } from "./helpers.js";

/** Fails its first delivery of step 0 for good, then records what each later delivery was given. */
function failingOnce(seen: { maxAttempts: number; priority: number | undefined }[], env: () => Env): StepRunner {
  let failed = false;
  return {
    async runStep(s: Step) {
      if (!failed) {
        failed = true;
        return StepOutcome.fail("fails once");
      }
      seen.push({ maxAttempts: s.maxAttempts, priority: (await env().queue.view().job(s.jobId))?.priority });
      return StepOutcome.succeed(enc("ok"));
    },
  };
}

async function redriven(options: { priority?: number; maxAttemptsPerStep?: number }) {
  const seen: { maxAttempts: number; priority: number | undefined }[] = [];
  let envRef: Env | undefined;
  const env = await openEnv(
    failingOnce(seen, () => envRef!),
    { queueOptions: { queueConfigs: { "workflow-steps": { maxAttempts: 5 } } } },
  );
  envRef = env;
  await env.runtime.submit({ runId: "r", input: enc("in"), options });
  await until(async () => (await env.runtime.status("r"))?.state === "terminated", "the run's first end");
  await env.runtime.retryRun("r");
  expect((await env.runtime.wait("r")).termination.status).toBe("succeeded");
  await env.stop();
  return seen;
}

describe("a run record's rare fields", () => {
  it("a redriven step has the priority and attempts the run was submitted with", async () => {
    expect(await redriven({ priority: 6, maxAttemptsPerStep: 2 })).toEqual([{ maxAttempts: 2, priority: 6 }]);
  });

  it("each alone", async () => {
    expect((await redriven({ priority: 3 }))[0]?.priority).toBe(3);
    expect((await redriven({ maxAttemptsPerStep: 4 }))[0]?.maxAttempts).toBe(4);
  });

  it("without them, the queue's", async () => {
    expect(await redriven({})).toEqual([{ maxAttempts: 5, priority: expect.any(Number) }]);
  });
});
