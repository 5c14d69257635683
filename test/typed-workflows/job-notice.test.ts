/**
 * Job completion signals (`notifySignal`): a workflow step submits a job and
 * continues on a signal instead of blocking in a join; the job's outcome
 * (succeeded, a typed failure, cancelled) arrives as that signal, also when
 * the job ended after a restart. One runtime hosts the job and the workflow
 * (an untyped run through the fallback runner), on a mock clock.
 */

import { describe, expect, it } from "vitest";
import {
  JobRunner,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  ValidationError,
  WorkflowDispatcher,
  WorkflowRuntime,
  type JobNotice,
  type ObjectStore,
  type RunnerHandle,
  type StepRunner,
} from "taquba";
import { until, useOpenApps } from "../workflow/helpers.js";
import { emailJob, type EmailOutput } from "../jobs/fixtures.js";

const DAY = 86_400_000;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

interface App {
  queue: Queue;
  runner: JobRunner;
  worker: RunnerHandle;
}

const { track, stop } = useOpenApps<App>();

/**
 * The workflow: step 0 submits the email job (keyed by the run, so a retried
 * step finds it) with a completion signal and waits for it; step 1 ends the
 * run with the notice it received. `later@` jobs are scheduled an hour out.
 */
function mailFlow(app: () => JobRunner, clock: MockClock, jobIds: Map<string, string>): StepRunner {
  return {
    async runStep(step) {
      if (step.stepNumber === 0) {
        const to = dec(step.payload);
        const key = `mail-done:${step.runId}`;
        const h = await app().submit(
          emailJob,
          { to },
          { idempotencyKey: `${step.runId}:mail`, notifySignal: key, ...(to.startsWith("later@") ? { runAt: clock.now() + 3_600_000 } : {}) },
        );
        jobIds.set(step.runId, h.jobId);
        return StepOutcome.continueOnSignal(enc("waiting"), key, DAY);
      }
      if (step.signal === null || step.signal === undefined) return StepOutcome.fail("no notice before the timeout");
      return StepOutcome.succeed(step.signal);
    },
  };
}

async function start(store: ObjectStore, clock: MockClock, calls: string[], jobIds: Map<string, string>): Promise<App> {
  const queue = await Queue.open(store, "notify", { clock, flushIntervalMs: 1, queueConfigs: { steps: { backoff: { baseMs: 1000, maxMs: 1000 } } } });
  let runner!: JobRunner;
  runner = JobRunner.builder(queue, store)
    .queueName("steps")
    .logger({ error: () => undefined })
    .register(emailJob, {
      async run(input, ctx) {
        calls.push(`${input.to}#${ctx.attempt}`);
        if (ctx.attempt === 1 && !input.to.startsWith("later@")) throw new Error("mail server answered 421");
        if (input.to.startsWith("bounce@")) ctx.fail({ reason: "bounced" });
        return { message_id: `m-${input.to}` };
      },
    })
    .fallback(mailFlow(() => runner, clock, jobIds))
    .build();
  const app = { queue, runner, worker: runner.spawn() };
  return track(app);
}

async function notice(app: App, runId: string): Promise<JobNotice<EmailOutput, { reason: string }>> {
  const end = await app.runner.wait(runId);
  expect(end.termination.status).toBe("succeeded");
  return JSON.parse(dec(end.outcome?.result)) as JobNotice<EmailOutput, { reason: string }>;
}

describe("job completion signals", () => {
  it("a waiting step resumes with the job's outcome, sent when the job ends after a restart", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const calls: string[] = [];
    const jobIds = new Map<string, string>();
    let app = await start(store, clock, calls, jobIds);
    await app.runner.submit({ runId: "run-ok", input: enc("ok@x.io") });
    await app.runner.submit({ runId: "run-bounce", input: enc("bounce@x.io") });
    await app.runner.submit({ runId: "run-later", input: enc("later@x.io") });
    // Each run waits on its signal while its job waits for its retry (or its runAt).
    for (const runId of ["run-ok", "run-bounce", "run-later"]) await until(async () => (await app.runner.status(runId))?.step === 1, `${runId} waiting`);
    await until(() => calls.length === 2, "the first attempts");
    for (const runId of ["run-ok", "run-bounce"]) {
      await until(async () => (await app.runner.status(jobIds.get(runId)!))?.state === "pending", `${runId}'s job retry scheduled`);
    }

    await stop(app);
    app = await start(store, clock, calls, jobIds);
    expect(await app.runner.status("run-ok")).toMatchObject({ state: "pending", step: 1 });
    expect(await app.runner.cancel(jobIds.get("run-later")!)).toBe(true);
    clock.advance(1_000);

    expect(await notice(app, "run-ok")).toEqual({ job_id: jobIds.get("run-ok"), status: "succeeded", output: { message_id: "m-ok@x.io" } });
    expect(await notice(app, "run-bounce")).toMatchObject({ job_id: jobIds.get("run-bounce"), status: "failed", error: { reason: "bounced" }, kind: "runner" });
    expect(await notice(app, "run-later")).toMatchObject({ job_id: jobIds.get("run-later"), status: "cancelled" });
    expect([...calls].sort()).toEqual(["bounce@x.io#1", "bounce@x.io#2", "ok@x.io#1", "ok@x.io#2"]);
  });

  it("is refused where it cannot be honoured: a hand-built runtime, a job group, a bad key", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "notify", { clock, flushIntervalMs: 1 });
    try {
      const dispatcher = WorkflowDispatcher.builder()
        .register(emailJob, { run: async (i) => ({ message_id: i.to }) })
        .build();
      const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook).build();
      const over = JobRunner.over(queue, runtime, dispatcher);
      await expect(over.submit(emailJob, { to: "a@x.io" }, { notifySignal: "k" })).rejects.toThrow(/notifySignal needs the runner's terminal hook/);
      const built = JobRunner.builder(queue, store)
        .queueName("other")
        .register(emailJob, { run: async (i) => ({ message_id: i.to }) })
        .build();
      await expect(built.submit(emailJob, { to: "a@x.io" }, { notifySignal: "" })).rejects.toBeInstanceOf(ValidationError);
      await expect(built.group("g", emailJob).submit([{ to: "a@x.io" }], { notifySignal: "k" } as never)).rejects.toThrow(/drop notifySignal/);
      // Nothing was enqueued by the refused submissions.
      expect((await queue.view().stats("other")).pending + (await queue.view().stats("workflow-steps")).pending).toBe(0);
    } finally {
      await queue.close();
    }
  });
});
