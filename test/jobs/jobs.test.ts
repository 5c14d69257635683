/**
 * @module Typed jobs on a `JobRunner`: results across restarts, validation
 * before enqueue, idempotency keys, retries, typed errors, handler context,
 * cancel and shutdown.
 */
import { describe, expect, it } from "vitest";
import {
  InputMismatchError,
  JobCancelledError,
  JobFailedError,
  JobNotFoundError,
  MemoryStore,
  PermanentError,
  StateKey,
  ValidationError,
  jobContext,
  type JobContext,
  type JobHandler,
} from "taquba";
import { validatingHandler } from "taquba/generated";
import { addJob, emailJob, keyedEmailJob, openJobEnv, type EmailError, type EmailInput, type EmailOutput, type TestHeaders } from "./fixtures.js";
import { settle, until } from "../workflow/helpers.js";

type EmailCtx = JobContext<TestHeaders, EmailError>;

/** A handler driven by the recipient: "blocked@…" fails with a typed error, "flaky@…" throws once, "perm@…" throws permanently. */
function emailHandler(calls: string[] = []): JobHandler<EmailInput, EmailOutput, EmailError, TestHeaders> {
  return {
    async run(input: EmailInput, ctx: EmailCtx): Promise<EmailOutput> {
      calls.push(`${input.to}#${ctx.attempt}`);
      const [user] = input.to.split("@");
      if (user === "blocked") ctx.fail({ reason: "blocked" });
      if (user === "badtyped") ctx.fail({ reason: "lost" } as unknown as EmailError);
      if (user === "flaky" && ctx.attempt === 1) throw new Error("smtp timeout");
      if (user === "down") throw new Error("smtp down");
      if (user === "perm") throw new PermanentError("mailbox does not exist");
      if (user === "badout") return { id: 1 } as unknown as EmailOutput;
      return { message_id: `m-${input.to}-${ctx.headers.tenant_id ?? "none"}` };
    },
  };
}

describe("typed jobs", () => {
  it("runs a job and resolves its typed output; fetchResult reads it after a restart", async () => {
    const store = new MemoryStore();
    const env = await openJobEnv((b) => b.register(emailJob, emailHandler()), { store });
    const handle = await env.runner.submit(emailJob, { to: "a@x.io" }, { headers: { tenant_id: "acme" } });
    expect(handle.newlySubmitted).toBe(true);
    expect(await handle.output()).toEqual({ message_id: "m-a@x.io-acme" });
    expect(await handle.result()).toEqual({ status: "succeeded", output: { message_id: "m-a@x.io-acme" } });
    await env.stop();

    const again = await openJobEnv((b) => b.register(emailJob, emailHandler()), { store, start: false });
    const h2 = again.runner.handle(emailJob, handle.jobId);
    expect(await h2.fetchResult()).toEqual({ status: "succeeded", output: { message_id: "m-a@x.io-acme" } });
    await expect(again.runner.handle(emailJob, "nope").fetchResult()).rejects.toBeInstanceOf(JobNotFoundError);
    await again.stop();
  });

  it("keeps the result in the record committed with the termination, not in the run memo", async () => {
    const env = await openJobEnv((b) => b.register(emailJob, emailHandler()));
    const handle = await env.runner.submit(emailJob, { to: "a@x.io" });
    await handle.result();
    // The workflow's best-effort run result record (object store) is not what jobs read.
    await env.runner.runtime.memoStore.clearMemosForRun(handle.jobId);
    expect(await handle.fetchResult()).toMatchObject({ status: "succeeded" });
    expect(await env.queue.kvGet(`jobs/results/jobs/${handle.jobId}`)).not.toBeNull();
    await env.stop();
  });

  it("validates input, headers and options before anything is enqueued", async () => {
    const env = await openJobEnv((b) => b.register(emailJob, emailHandler()), { start: false });
    await expect(env.runner.submit(emailJob, { to: "not-an-address" })).rejects.toBeInstanceOf(ValidationError);
    await expect(env.runner.submit(emailJob, { to: "a@x.io", extra: 1 } as unknown as EmailInput)).rejects.toThrow(/extra/);
    await expect(env.runner.submit(emailJob, { to: "a@x.io" }, { headers: { tenant: "x" } as unknown as TestHeaders })).rejects.toBeInstanceOf(ValidationError);
    await expect(env.runner.submit(emailJob, { to: "a@x.io" }, { maxAttempts: 0 })).rejects.toBeInstanceOf(ValidationError);
    await expect(env.runner.submit(keyedEmailJob, { to: "a@x.io" }, { idempotencyKey: "" })).rejects.toBeInstanceOf(ValidationError);
    expect((await env.queue.kvScan("")).entries).toEqual([]);
    expect(await env.queue.view().stats("jobs")).toMatchObject({ pending: 0, scheduled: 0 });
    await env.stop();
  });

  it("an idempotency key collapses duplicates before and after completion, across a restart; a different input is InputMismatchError", async () => {
    const store = new MemoryStore();
    const calls: string[] = [];
    const first = await openJobEnv((b) => b.register(keyedEmailJob, emailHandler(calls)), { store, start: false });
    const h1 = await first.runner.submit(keyedEmailJob, { to: "k@x.io", subject: "s" });
    const dup = await first.runner.submit(keyedEmailJob, { subject: "s", to: "k@x.io" });
    expect(dup.jobId).toBe(h1.jobId);
    expect(dup.newlySubmitted).toBe(false);
    await expect(first.runner.submit(keyedEmailJob, { to: "k@x.io", subject: "other" })).rejects.toBeInstanceOf(InputMismatchError);
    const worker = first.runner.spawn();
    await h1.result();
    const after = await first.runner.submit(keyedEmailJob, { to: "k@x.io", subject: "s" });
    expect(after.newlySubmitted).toBe(false);
    expect(await after.output()).toEqual({ message_id: "m-k@x.io-none" });
    await worker.shutdown();
    await first.stop();

    const second = await openJobEnv((b) => b.register(keyedEmailJob, emailHandler(calls)), { store });
    const late = await second.runner.submit(keyedEmailJob, { to: "k@x.io", subject: "s" });
    expect(late.jobId).toBe(h1.jobId);
    expect(late.newlySubmitted).toBe(false);
    expect(await late.fetchResult()).toMatchObject({ status: "succeeded" });
    await expect(second.runner.submit(keyedEmailJob, { to: "k@x.io" })).rejects.toBeInstanceOf(InputMismatchError);
    // An explicit key overrides the template.
    const other = await second.runner.submit(keyedEmailJob, { to: "k@x.io" }, { idempotencyKey: "manual-1" });
    expect(other.jobId).not.toBe(h1.jobId);
    await other.result();
    expect(calls).toEqual(["k@x.io#1", "k@x.io#1"]);
    await second.stop();
  });

  it("retries a transient failure, then succeeds", async () => {
    const calls: string[] = [];
    const env = await openJobEnv((b) => b.register(emailJob, emailHandler(calls)));
    const h = await env.runner.submit(emailJob, { to: "flaky@x.io" });
    expect(await h.output()).toEqual({ message_id: "m-flaky@x.io-none" });
    expect(calls).toEqual(["flaky@x.io#1", "flaky@x.io#2"]);
    await env.stop();
  });

  it("reports exhausted attempts, permanent errors, typed errors and invalid outputs", async () => {
    const calls: string[] = [];
    const env = await openJobEnv((b) => b.register(emailJob, emailHandler(calls)));
    const down = await env.runner.submit(emailJob, { to: "down@x.io" }, { maxAttempts: 2 });
    const perm = await env.runner.submit(emailJob, { to: "perm@x.io" });
    const typed = await env.runner.submit(emailJob, { to: "blocked@x.io" });
    const badTyped = await env.runner.submit(emailJob, { to: "badtyped@x.io" });
    const badOut = await env.runner.submit(emailJob, { to: "badout@x.io" });

    expect(await down.result()).toEqual({ status: "failed", error: undefined, message: "smtp down" });
    await expect(down.output()).rejects.toMatchObject({ kind: "transient", error: undefined });
    expect(calls.filter((c) => c.startsWith("down@"))).toEqual(["down@x.io#1", "down@x.io#2"]);

    await expect(perm.output()).rejects.toMatchObject({ kind: "permanent" });
    expect(calls.filter((c) => c.startsWith("perm@"))).toHaveLength(1);

    expect(await typed.result()).toEqual({ status: "failed", error: { reason: "blocked" }, message: expect.any(String) });
    const err = await typed.output().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobFailedError);
    expect((err as JobFailedError<EmailError>).error).toEqual({ reason: "blocked" });
    expect((err as JobFailedError<EmailError>).kind).toBe("runner");
    expect(calls.filter((c) => c.startsWith("blocked@"))).toHaveLength(1);

    const bt = await badTyped.result();
    expect(bt).toMatchObject({ status: "failed", error: undefined });
    expect(bt.status === "failed" && bt.message).toMatch(/reason/);
    const bo = await badOut.result();
    expect(bo.status === "failed" && bo.message).toMatch(/message_id/);
    await env.stop();
  });

  it("a job submitted under a definition nobody registered fails permanently", async () => {
    const env = await openJobEnv((b) => b.register(emailJob, emailHandler()));
    const h = await env.runner.submit(addJob, { a: 1, b: 2 });
    const r = await h.result();
    expect(r.status === "failed" && r.message).toMatch(/no handler is registered for job "test.add"/);
    await env.stop();
  });

  it("handlers get the delivery, registered state and submit for child jobs, also through validatingHandler", async () => {
    const OFFSET = new StateKey<number>("offset");
    const MISSING = new StateKey<string>("missing");
    const seen: unknown[] = [];
    const env = await openJobEnv((b) =>
      b.state(OFFSET, 100).register(
        addJob,
        validatingHandler(addJob, {
          async run(input, ctx) {
            const rc = jobContext(ctx);
            seen.push(rc.delivery.runId === ctx.jobId, rc.tryState(MISSING));
            expect(() => rc.state(MISSING)).toThrow(/missing/);
            if (input.a < 0) {
              const child = await rc.submit(addJob, { a: -input.a, b: input.b }, { idempotencyKey: `child-of-${ctx.jobId}` });
              return (await child.output()) * 2;
            }
            return input.a + input.b + rc.state(OFFSET);
          },
        }),
      ),
    );
    const h = await env.runner.submit(addJob, { a: -1, b: 2 });
    expect(await h.output()).toBe(206);
    expect(seen).toEqual([true, undefined, true, undefined]);
    expect(() => jobContext({} as JobContext)).toThrow(ValidationError);
    await env.stop();
  });

  it("cancels a pending job; the handle reports it", async () => {
    const env = await openJobEnv((b) => b.register(emailJob, emailHandler()), { start: false });
    const h = await env.runner.submit(emailJob, { to: "a@x.io" });
    expect(await h.fetchResult()).toBeNull();
    expect(await h.status()).toMatchObject({ state: "pending" });
    expect(await h.cancel()).toBe(true);
    expect(await h.result()).toEqual({ status: "cancelled" });
    await expect(h.output()).rejects.toBeInstanceOf(JobCancelledError);
    // The runner's untyped outcome agrees with the job's status: ended without a worker, it is the cancel.
    expect(await env.runner.outcome(h.jobId)).toMatchObject({ runId: h.jobId, status: "cancelled", errorKind: "cancelled" });
    await env.stop();
  });

  it("a running job's ctx.cancelSignal aborts on cancel, whether the handler read it before or only after", async () => {
    const reasons: string[] = [];
    let heard = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const env = await openJobEnv((b) =>
      b.register(emailJob, {
        async run(input: EmailInput, ctx: EmailCtx): Promise<EmailOutput> {
          started.push(input.to);
          // "early@…" reads the signal before the cancel and listens; "late@…" first reads it after.
          if (input.to.startsWith("early")) ctx.cancelSignal.addEventListener("abort", () => heard++, { once: true });
          await gate;
          expect(ctx.cancelSignal.aborted).toBe(true);
          expect(ctx.cancelSignal).toBe(jobContext(ctx).delivery.cancelSignal);
          reasons.push(String(ctx.cancelSignal.reason));
          return { message_id: "ignored" };
        },
      }),
    );
    const early = await env.runner.submit(emailJob, { to: "early@x.io" });
    const late = await env.runner.submit(emailJob, { to: "late@x.io" });
    await until(() => started.length === 2, "both handlers running");
    expect(await early.cancel()).toBe(true);
    expect(await late.cancel()).toBe(true);
    expect(heard).toBe(1);
    release();
    expect(await early.result()).toEqual({ status: "cancelled" });
    expect(await late.result()).toEqual({ status: "cancelled" });
    expect(reasons).toHaveLength(2);
    for (const r of reasons) expect(r).toMatch(/cancellation of job .* was requested/);
    await env.stop();
  });

  it("shutdown lets an in-flight job finish", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const env = await openJobEnv((b) =>
      b.register(addJob, {
        async run(input) {
          started();
          await gate;
          return input.a + input.b;
        },
      }),
    );
    const h = await env.runner.submit(addJob, { a: 2, b: 3 });
    await running;
    let stopped = false;
    const stopping = env.worker!.shutdown().then(() => (stopped = true));
    await settle(10);
    // Shutdown waits for the job in flight.
    expect(stopped).toBe(false);
    expect(await h.fetchResult()).toBeNull();
    release();
    await stopping;
    expect(await h.fetchResult()).toEqual({ status: "succeeded", output: 5 });
    await env.stop();
  });
});
