/**
 * Two job runners over one `Queue` with different step queues keep separate
 * job records: a job group with the same id gives both the same run ids, and
 * an idempotency key is reused on both, yet each runner reads back its own
 * results, collapses duplicates onto its own job, and neither result
 * retention nor forgetting a group on one touches the other's records.
 * A worker whose dispatcher no runner is attached to knows no step queue to
 * scope a result by, so it retries the job instead of storing it.
 */
import { describe, expect, it } from "vitest";
import {
  InputMismatchError,
  JobNotFoundError,
  JobRunner,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  WorkflowDispatcher,
  WorkflowRuntime,
  type JobRunnerBuilder,
} from "taquba";
import { emailJob, type EmailInput } from "./fixtures.js";

const noBackoff = { backoff: { baseMs: 0, maxMs: 0 }, maxAttempts: 3 };

/** One queue, two runners: `a` on step queue `steps-a`, `b` on `steps-b`; each handler tags its output with its side. */
async function openTwo(configure: { a?: (b: JobRunnerBuilder) => JobRunnerBuilder; b?: (b: JobRunnerBuilder) => JobRunnerBuilder } = {}) {
  const store = new MemoryStore();
  const clock = new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "q", { flushIntervalMs: 1, clock, queueConfigs: { "steps-a": noBackoff, "steps-b": noBackoff } });
  const calls: string[] = [];
  const make = (side: "a" | "b", extra: ((b: JobRunnerBuilder) => JobRunnerBuilder) | undefined) => {
    const base = JobRunner.builder(queue, store)
      .queueName(`steps-${side}`)
      .pollIntervalMs(3_600_000)
      .register(emailJob, {
        async run(input: EmailInput) {
          calls.push(`${side}:${input.to}`);
          return { message_id: `${side}-${input.to}` };
        },
      });
    return (extra ?? ((b) => b))(base).build();
  };
  const a = make("a", configure.a);
  const b = make("b", configure.b);
  const workers = [a.spawn(), b.spawn()];
  return {
    queue,
    clock,
    calls,
    a,
    b,
    async stop() {
      for (const w of workers) await w.shutdown();
      await queue.close();
    },
  };
}

describe("job records are scoped by step queue", () => {
  it("the same run id and the same idempotency key on two step queues keep their own results and dedup records", async () => {
    const env = await openTwo();
    // Same group id and key: the same member run id on both step queues.
    const ga = env.a.group("shared", emailJob);
    const gb = env.b.group("shared", emailJob);
    await ga.submit([{ to: "x@x.io" }]);
    await gb.submit([{ to: "x@x.io" }]);
    expect(ga.handle("item-0").jobId).toBe(gb.handle("item-0").jobId);
    expect((await ga.join()).map((r) => r.outcome)).toEqual([{ status: "succeeded", output: { message_id: "a-x@x.io" } }]);
    expect((await gb.join()).map((r) => r.outcome)).toEqual([{ status: "succeeded", output: { message_id: "b-x@x.io" } }]);

    const ka = await env.a.submit(emailJob, { to: "k@x.io" }, { idempotencyKey: "order-1" });
    const kb = await env.b.submit(emailJob, { to: "other@x.io" }, { idempotencyKey: "order-1" });
    expect(await ka.output()).toEqual({ message_id: "a-k@x.io" });
    expect(await kb.output()).toEqual({ message_id: "b-other@x.io" });
    // Each side's dedup record holds its own input: duplicates collapse, a different input is refused.
    expect((await env.a.submit(emailJob, { to: "k@x.io" }, { idempotencyKey: "order-1" })).newlySubmitted).toBe(false);
    expect((await env.b.submit(emailJob, { to: "other@x.io" }, { idempotencyKey: "order-1" })).newlySubmitted).toBe(false);
    await expect(env.a.submit(emailJob, { to: "other@x.io" }, { idempotencyKey: "order-1" })).rejects.toBeInstanceOf(InputMismatchError);
    await expect(env.b.submit(emailJob, { to: "k@x.io" }, { idempotencyKey: "order-1" })).rejects.toBeInstanceOf(InputMismatchError);

    // Reading after the fact (as after a restart) still gives each side its own result.
    expect(await env.a.handle(emailJob, ga.handle("item-0").jobId).fetchResult()).toEqual({ status: "succeeded", output: { message_id: "a-x@x.io" } });
    expect(await env.b.handle(emailJob, gb.handle("item-0").jobId).fetchResult()).toEqual({ status: "succeeded", output: { message_id: "b-x@x.io" } });
    for (const side of ["a", "b"] as const) {
      const keys = (await env.queue.kvScan(`jobs/dedup/steps-${side}/`)).entries.map((e) => e.key);
      expect(keys).toEqual([`jobs/dedup/steps-${side}/${side === "a" ? ka.jobId : kb.jobId}`]);
      expect((await env.queue.kvScan(`jobs/results/steps-${side}/`)).entries).toHaveLength(2);
    }
    expect(env.calls.sort()).toEqual(["a:k@x.io", "a:x@x.io", "b:other@x.io", "b:x@x.io"]);
    await env.stop();
  });

  it("result retention and group forget on one step queue leave the other's records alone", async () => {
    const env = await openTwo({ a: (b) => b.resultRetention(60_000) });
    const ga = env.a.group("shared", emailJob);
    const gb = env.b.group("shared", emailJob);
    await ga.submit([{ to: "x@x.io" }]);
    await gb.submit([{ to: "x@x.io" }]);
    await ga.join();
    await gb.join();
    const ka = await env.a.submit(emailJob, { to: "k@x.io" }, { idempotencyKey: "order-1" });
    const kb = await env.b.submit(emailJob, { to: "k@x.io" }, { idempotencyKey: "order-1" });
    await ka.result();
    await kb.result();
    const memberId = ga.handle("item-0").jobId;

    env.clock.advance(60_000);
    expect(await env.a.sweepResults()).toBe(2);
    await expect(env.a.handle(emailJob, memberId).fetchResult()).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(ka.fetchResult()).rejects.toBeInstanceOf(JobNotFoundError);
    expect((await env.queue.kvScan("jobs/dedup/steps-a/")).entries).toEqual([]);
    // B, without retention, keeps its result and dedup records.
    expect(await env.b.handle(emailJob, memberId).fetchResult()).toEqual({ status: "succeeded", output: { message_id: "b-x@x.io" } });
    expect(await kb.fetchResult()).toEqual({ status: "succeeded", output: { message_id: "b-k@x.io" } });
    expect((await env.b.submit(emailJob, { to: "k@x.io" }, { idempotencyKey: "order-1" })).newlySubmitted).toBe(false);

    // Forgetting A's group removes A's member records only.
    await ga.forget();
    expect(await env.b.handle(emailJob, memberId).fetchResult()).toEqual({ status: "succeeded", output: { message_id: "b-x@x.io" } });
    expect(await gb.forget()).toBe(true);
    await expect(env.b.handle(emailJob, memberId).fetchResult()).rejects.toBeInstanceOf(JobNotFoundError);
    expect((await env.queue.kvScan("jobs/results/")).entries.map((e) => e.key)).toEqual([`jobs/results/steps-b/${kb.jobId}`]);
    await env.stop();
  });

  it("a worker whose dispatcher has no runner attached retries the job instead of storing an unscoped result", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "q", { flushIntervalMs: 1, clock, queueConfigs: { steps: noBackoff } });
    const calls: string[] = [];
    const handler = { run: async (input: EmailInput) => (calls.push(input.to), { message_id: input.to }) };
    // The submitting runner runs no worker; the only worker is a hand-built runtime nobody attached a runner to.
    const runner = JobRunner.builder(queue, store).queueName("steps").register(emailJob, handler).build();
    const dispatcher = WorkflowDispatcher.builder().register(emailJob, handler).build();
    const bare = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
      .queueName("steps")
      .logger({ error: () => undefined })
      .build();
    const worker = bare.spawn();
    const h = await runner.submit(emailJob, { to: "a@x.io" });
    const end = await bare.wait(h.jobId);
    expect(end.termination.status).toBe("failed");
    expect(end.termination.error).toMatch(/JobRunner/);
    expect(calls).toEqual([]);
    expect((await queue.kvScan("jobs/")).entries).toEqual([]);
    await worker.shutdown();
    await queue.close();
  });
});
