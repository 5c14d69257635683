/**
 * @module Operating typed jobs: `listJobs` by name and state, `retryJob`
 * replacing a failed result once the job succeeds, a dead job requeued
 * through the queue doing the same, and a failed keyed job resubmitted
 * with its key answering the old failure (by design: use `retryJob`).
 */
import { describe, expect, it } from "vitest";
import { JobNotFoundError, PermanentError, RunNotRetryableError, ValidationError, type JobContext, type JobHandler } from "taquba";
import { emailJob, keyedEmailJob, openJobEnv, type EmailError, type EmailInput, type EmailOutput, type TestHeaders } from "./fixtures.js";
import { until } from "../support/until.js";

/** Fails "blocked@…" with a typed error and "perm@…" permanently until `fixed` is set. */
function mailer(state: { fixed: boolean; calls: string[] }): JobHandler<EmailInput, EmailOutput, EmailError, TestHeaders> {
  return {
    async run(input: EmailInput, ctx: JobContext<TestHeaders, EmailError>): Promise<EmailOutput> {
      state.calls.push(input.to);
      const [user] = input.to.split("@");
      if (!state.fixed && user === "blocked") ctx.fail({ reason: "blocked" });
      if (!state.fixed && user === "perm") throw new PermanentError("mailbox does not exist");
      return { message_id: `m-${input.to}` };
    },
  };
}

describe("operating jobs", () => {
  it("lists jobs by name and state, and retryJob replaces a failed result once the job succeeds", async () => {
    const state = { fixed: false, calls: [] as string[] };
    const env = await openJobEnv((b) => b.register(emailJob, mailer(state)).register(keyedEmailJob, mailer(state)));
    const ok = await env.runner.submit(emailJob, { to: "ok@x.io" });
    env.clock.advance(1000);
    const blocked = await env.runner.submit(emailJob, { to: "blocked@x.io" });
    env.clock.advance(1000);
    const perm = await env.runner.submit(keyedEmailJob, { to: "perm@x.io" });
    expect((await ok.result()).status).toBe("succeeded");
    expect(await blocked.result()).toMatchObject({ status: "failed", error: { reason: "blocked" } });
    expect((await perm.result()).status).toBe("failed");

    const all = await env.runner.listJobs();
    expect(all.runs.map((r) => [r.runId, r.kind, r.workflow, r.state])).toEqual([
      [perm.jobId, "job", "test.email.keyed", "failed"],
      [blocked.jobId, "job", "test.email.send", "failed"],
      [ok.jobId, "job", "test.email.send", "succeeded"],
    ]);
    expect((await env.runner.listJobs({ job: "test.email.send", state: "failed" })).runs.map((r) => r.runId)).toEqual([blocked.jobId]);
    expect((await env.runner.listJobs({ job: "nobody" })).runs).toEqual([]);
    await expect(env.runner.listJobs({ workflow: "x" } as never)).rejects.toBeInstanceOf(ValidationError);
    await expect(env.runner.listJobs({ state: "nope" } as never)).rejects.toBeInstanceOf(ValidationError);

    await expect(env.runner.retryJob(ok.jobId)).rejects.toMatchObject({ reason: "succeeded" });
    await expect(env.runner.retryJob("j_nobody")).rejects.toBeInstanceOf(JobNotFoundError);

    state.fixed = true;
    expect(await env.runner.retryJob(blocked.jobId)).toMatchObject({ runId: blocked.jobId, step: 0 });
    await until("the retried job succeeds", async () => (await blocked.fetchResult())?.status === "succeeded");
    expect(await blocked.result()).toEqual({ status: "succeeded", output: { message_id: "m-blocked@x.io" } });
    expect((await env.runner.listJobs({ state: "failed" })).runs.map((r) => r.runId)).toEqual([perm.jobId]);
    await env.stop();
  });

  it("a dead job requeued through the queue runs again and replaces its failed result", async () => {
    const state = { fixed: false, calls: [] as string[] };
    const env = await openJobEnv((b) => b.register(emailJob, mailer(state)));
    const perm = await env.runner.submit(emailJob, { to: "perm@x.io" });
    expect((await perm.result()).status).toBe("failed");
    const [dead] = await env.queue.view().deadJobs("jobs");
    expect(dead).toBeDefined();
    state.fixed = true;
    expect(await env.queue.requeueDead(dead!.id)).toBe(true);
    await until("the requeued job succeeds", async () => (await perm.fetchResult())?.status === "succeeded");
    expect(await perm.result()).toEqual({ status: "succeeded", output: { message_id: "m-perm@x.io" } });
    expect(state.calls).toEqual(["perm@x.io", "perm@x.io"]);
    await env.stop();
  });

  it("a failed keyed job resubmitted with its key answers the old failure; retryJob runs it again", async () => {
    const state = { fixed: false, calls: [] as string[] };
    const env = await openJobEnv((b) => b.register(keyedEmailJob, mailer(state)));
    const first = await env.runner.submit(keyedEmailJob, { to: "blocked@x.io" });
    expect((await first.result()).status).toBe("failed");
    state.fixed = true;
    const again = await env.runner.submit(keyedEmailJob, { to: "blocked@x.io" });
    expect(again.jobId).toBe(first.jobId);
    expect((await again.result()).status).toBe("failed");
    expect(state.calls).toHaveLength(1);
    await env.runner.retryJob(first.jobId);
    await until("the retried job succeeds", async () => (await first.fetchResult())?.status === "succeeded");
    expect(state.calls).toHaveLength(2);
    await expect(env.runner.retryJob(first.jobId)).rejects.toBeInstanceOf(RunNotRetryableError);
    await env.stop();
  });
});
