/**
 * @module Attack on the job a run's end names, with step jobs named as the
 * words of the worker-less end tokens. A caller's `WorkflowQueue` draws
 * the step jobs' ids, and may draw "dead" or "cancel": a worker's end of
 * job "dead" at attempt 1 has the token `dead:1`, which is also the form
 * of a dead-step reconciliation of a job "1". Read without the end's kind,
 * a redrive of the first run requeued another run's dead job "1", and a
 * requeue of the dead job "dead" did not re-open its run.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, type StepRunner } from "taquba";
import { dec, enc, type Env, openEnv, until } from "./helpers.js";
import { namingQueue } from "./fixtures/naming-queue.js";

const STEPS = "workflow-steps";

/** Fails every step permanently until `healed`, then succeeds with the run's id. */
function healingRunner(): StepRunner & { healed: boolean } {
  const r = {
    healed: false,
    async runStep(s: { runId: string }) {
      if (!r.healed) throw StepError.permanent(`${s.runId} failed`);
      return StepOutcome.succeed(enc(`${s.runId} done`));
    },
  };
  return r;
}

async function stateOf(env: Env, jobId: string): Promise<string | undefined> {
  return (await env.queue.view().job(jobId))?.state;
}

const oneAttempt = { queueConfigs: { [STEPS]: { maxAttempts: 1 } } };

describe("step jobs named as an end token's word", () => {
  it("a redrive of a run whose step job is named 'dead' requeues that job, not another run's dead job named as its attempt", async () => {
    const runner = healingRunner();
    const env = await openEnv(runner, { wrapQueue: namingQueue(["dead", "1"]), queueOptions: oneAttempt });
    try {
      expect((await env.runtime.submit({ input: enc("a"), runId: "a" })).jobId).toBe("dead");
      expect((await env.runtime.wait("a")).termination).toMatchObject({ status: "failed", errorKind: "permanent" });
      expect((await env.runtime.submit({ input: enc("b"), runId: "b" })).jobId).toBe("1");
      expect((await env.runtime.wait("b")).termination).toMatchObject({ status: "failed" });
      expect([await stateOf(env, "dead"), await stateOf(env, "1")]).toEqual(["dead", "dead"]);

      runner.healed = true;
      await env.runtime.retryRun("a");
      const a = await env.runtime.wait("a");
      expect(a.outcome?.status).toBe("succeeded");
      expect(dec(a.outcome?.result)).toBe("a done");
      // Run a's own dead job ran again; run b and its dead job are as they were.
      expect(await stateOf(env, "dead")).not.toBe("dead");
      expect(await stateOf(env, "1")).toBe("dead");
      expect(await env.runtime.status("b")).toMatchObject({ state: "terminated", status: "failed" });
      expect((await env.runtime.inspectRun("b"))?.redrives).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("a dead step job named 'dead' requeued through the queue re-opens its run", async () => {
    const runner = healingRunner();
    const env = await openEnv(runner, { wrapQueue: namingQueue(["dead"]), queueOptions: oneAttempt });
    try {
      await env.runtime.submit({ input: enc("a"), runId: "a" });
      expect((await env.runtime.wait("a")).termination).toMatchObject({ status: "failed" });
      runner.healed = true;
      expect(await env.queue.requeueDead("dead")).toBe(true);
      await until(async () => (await env.runtime.outcome("a"))?.status === "succeeded", "run a re-opened and ended again");
      expect(dec((await env.runtime.outcome("a"))?.result)).toBe("a done");
      expect((await env.runtime.inspectRun("a"))?.redrives).toHaveLength(1);
    } finally {
      await env.stop();
    }
  });

  it("a redrive of a run its worker cancelled on a step job named 'cancel' leaves another run's dead job named as the attempt", async () => {
    let release: (() => void) | undefined;
    let cancelDead = true;
    const runner: StepRunner = {
      async runStep(s) {
        if (s.runId === "b") throw StepError.permanent("b failed");
        if (cancelDead) {
          // Held until the cancel request reaches the running step.
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return StepOutcome.succeed(enc("too late"));
        }
        return StepOutcome.succeed(enc(`${s.runId} done`));
      },
    };
    const env = await openEnv(runner, { wrapQueue: namingQueue(["1", "cancel"]), queueOptions: oneAttempt });
    try {
      await env.runtime.submit({ input: enc("b"), runId: "b" });
      await env.runtime.wait("b");
      await env.runtime.submit({ input: enc("c"), runId: "c" });
      await until(() => release !== undefined, "run c's step running");
      await env.runtime.cancel("c");
      release!();
      // The worker's end of delivery 1 of job "cancel": the token `cancel:1`, as an external cancel of a job "1" would have.
      expect((await env.runtime.wait("c")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      expect(await stateOf(env, "1")).toBe("dead");

      cancelDead = false;
      await env.runtime.retryRun("c");
      const c = await env.runtime.wait("c");
      expect(dec(c.outcome?.result)).toBe("c done");
      expect(await stateOf(env, "1")).toBe("dead");
      expect(await env.runtime.status("b")).toMatchObject({ state: "terminated", status: "failed" });
      expect((await env.runtime.inspectRun("b"))?.redrives).toEqual([]);
    } finally {
      release?.();
      await env.stop();
    }
  });
});
