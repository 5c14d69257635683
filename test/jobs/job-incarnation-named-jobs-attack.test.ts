/**
 * @module A job run submitted again under its run id (a failed group member
 * run again) reports its own end, and keeps its own result record, also
 * when a custom `WorkflowQueue` names the later run's step job as the
 * earlier run's: what ties a result record to its run is drawn at
 * submission, never taken from a job id.
 */
import { describe, expect, it } from "vitest";
import { JobRunner, MemoryStore, MockClock, PermanentError, Queue, type JobHandler } from "taquba";
import { namingQueue } from "../workflow/fixtures/naming-queue.js";
import { emailJob, type EmailError, type EmailInput, type EmailOutput, type TestHeaders } from "./fixtures.js";

type Mode = "typed-failure" | "refused" | "succeeds";

/** Fails with the typed error, fails permanently without a result record, or succeeds, as `mode.value` says. */
function handler(mode: { value: Mode }): JobHandler<EmailInput, EmailOutput, EmailError, TestHeaders> {
  return {
    async run(input, ctx) {
      if (mode.value === "typed-failure") ctx.fail({ reason: "blocked" });
      if (mode.value === "refused") throw new PermanentError("the mail server refused the run");
      return { message_id: `m-${input.to}` };
    },
  };
}

/** A runner whose step queue names the next step job from `names` while any are left; result retention as given. */
async function openNamed(mode: { value: Mode }, names: string[], retentionMs?: number) {
  const clock = new MockClock(1_700_000_000_000);
  const store = new MemoryStore();
  const queue = await Queue.open(store, "q", { flushIntervalMs: 1, clock, queueConfigs: { jobs: { backoff: { baseMs: 0, maxMs: 0 }, maxAttempts: 1 } } });
  let b = JobRunner.builder(namingQueue(names)(queue), store).pollIntervalMs(3_600_000).register(emailJob, handler(mode));
  if (retentionMs !== undefined) b = b.resultRetention(retentionMs);
  const runner = b.build();
  const worker = runner.spawn();
  return {
    clock,
    queue,
    runner,
    async stop() {
      await worker.shutdown();
      await queue.close();
    },
  };
}

describe("a job group member run again whose step job a naming queue names as the earlier run's", () => {
  it("reports its own end, not the earlier run's typed failure", async () => {
    const mode: { value: Mode } = { value: "typed-failure" };
    const names: string[] = [];
    const env = await openNamed(mode, names);
    try {
      const group = env.runner.group("mail", emailJob);
      names.push("first");
      await group.submit([{ to: "a@x.io" }]);
      expect((await group.join()).map((r) => r.outcome)).toEqual([{ status: "failed", error: { reason: "blocked" }, message: expect.any(String) }]);
      mode.value = "refused";
      names.push("first");
      expect((await group.submit([{ to: "a@x.io" }])).submitted).toBe(1);
      const [again] = await group.join();
      expect(again!.outcome.status).toBe("failed");
      expect(again!.outcome).toMatchObject({ error: undefined, message: expect.stringContaining("the mail server refused the run") });
      expect(again!.kind).toBe("permanent");
    } finally {
      await env.stop();
    }
  });

  it("keeps its result record when the earlier run's retention window ends", async () => {
    const mode: { value: Mode } = { value: "typed-failure" };
    const names: string[] = [];
    const env = await openNamed(mode, names, 10_000);
    try {
      const group = env.runner.group("mail", emailJob);
      names.push("first");
      await group.submit([{ to: "a@x.io" }]);
      await group.join();
      env.clock.advance(5_000);
      mode.value = "succeeds";
      names.push("first");
      expect((await group.submit([{ to: "a@x.io" }])).submitted).toBe(1);
      expect((await group.join()).map((r) => r.outcome)).toEqual([{ status: "succeeded", output: { message_id: "m-a@x.io" } }]);
      // The earlier run's window ends; the later run's has 5 s to go.
      env.clock.advance(6_000);
      expect(await env.runner.sweepResults()).toBe(1);
      expect((await group.join()).map((r) => r.outcome)).toEqual([{ status: "succeeded", output: { message_id: "m-a@x.io" } }]);
    } finally {
      await env.stop();
    }
  });

  it("re-opened by the runtime's retryRun (which keeps the ended pass's result record), whose step job the queue names as the ended pass's, reports the re-opened pass's end", async () => {
    const mode: { value: Mode } = { value: "typed-failure" };
    const names: string[] = [];
    const env = await openNamed(mode, names);
    try {
      const group = env.runner.group("mail", emailJob);
      names.push("first");
      await group.submit([{ to: "a@x.io" }]);
      const [ended] = await group.join();
      expect(ended!.outcome).toMatchObject({ status: "failed", error: { reason: "blocked" } });
      mode.value = "refused";
      names.push("first");
      await env.runner.runtime.retryRun(ended!.jobId);
      const [retried] = await group.join();
      expect(retried!.outcome).toMatchObject({ status: "failed", error: undefined, message: expect.stringContaining("the mail server refused the run") });
      expect(retried!.kind).toBe("permanent");
    } finally {
      await env.stop();
    }
  });
});
