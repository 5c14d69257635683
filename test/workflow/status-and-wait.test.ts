/**
 * @module `status`, `outcome` and `wait`, from the runtime and from a
 * `WorkflowView` over another process's reader; outcome records belong to
 * one termination.
 */
import { describe, expect, it } from "vitest";
import {
  LocalStore,
  MemoryStore,
  MemoStore,
  MockClock,
  Queue,
  QueueReader,
  RunNotFoundError,
  StepOutcome,
  WorkflowRuntime,
  NoopTerminalHook,
  WorkflowView,
  withCounting,
} from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc, openEnv, overInline, runnerOf, until } from "./helpers.js";

const tempDir = useTempDirs("wf-view-");

describe("status, outcome and wait", () => {
  it("reports unknown runs as null / RunNotFoundError", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    expect(await env.runtime.status("nope")).toBeNull();
    expect(await env.runtime.outcome("nope")).toBeNull();
    await expect(env.runtime.wait("nope")).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(env.runtime.waitTimeout("nope", 10)).rejects.toBeInstanceOf(RunNotFoundError);
    await env.stop();
  });

  it("outcome is null while active; wait follows a run across many steps", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const env = await openEnv(
      runnerOf(async (s) => {
        if (s.stepNumber === 5) await gate;
        return s.stepNumber < 9 ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(enc(`final ${s.stepNumber}`));
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "long" });
    const waiting = env.runtime.wait("long");
    await until(async () => (await env.runtime.status("long"))?.step === 5 && (await env.runtime.status("long"))?.state === "running", "step 5 running");
    expect(await env.runtime.status("long")).toMatchObject({ state: "running", step: 5 });
    expect(await env.runtime.outcome("long")).toBeNull();
    release();
    const end = await waiting;
    expect(end.termination.finalStep).toBe(9);
    expect(dec(end.outcome!.result)).toBe("final 9");
    await env.stop();
  });

  it("answers from durable records after a restart and from another runtime over the same queue", async () => {
    const store = new MemoryStore();
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(enc(`r:${dec(s.payload)}`))),
      { store },
    );
    await env.runtime.submit({ input: enc("a"), runId: "a" });
    await env.runtime.wait("a");
    const other = WorkflowRuntime.builder(
      env.queue,
      store,
      runnerOf(async () => StepOutcome.fail("unused")),
      NoopTerminalHook,
    ).build();
    expect(dec((await other.outcome("a"))!.result)).toBe("r:a");
    await env.stop();
    const env2 = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { store, clock: env.clock, start: false },
    );
    expect(await env2.runtime.status("a")).toMatchObject({ state: "terminated", status: "succeeded" });
    expect(dec((await env2.runtime.wait("a")).outcome!.result)).toBe("r:a");
    await env2.stop();
  });

  it("a WorkflowView over a QueueReader answers from another process's view of the store", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const env = await openEnv(
      runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 60_000) : StepOutcome.succeed(s.payload))),
      { store },
    );
    await env.runtime.submit({ input: enc("x"), runId: "v" });
    await until(async () => (await env.runtime.status("v"))?.step === 1, "step 1");
    const reader = await QueueReader.open(new LocalStore(dir), "wf");
    const view = new WorkflowView(reader, new MemoStore(new LocalStore(dir), "workflow-steps-memo"));
    // The reader sees durable state, which may trail the writer's by a flush.
    await until(async () => (await reader.refresh(), (await view.status("v"))?.step === 1), "reader sees step 1");
    expect(await view.status("v")).toMatchObject({ state: "pending", step: 1 });
    env.clock.advance(60_000);
    await env.runtime.wait("v");
    await until(async () => (await reader.refresh(), (await view.status("v"))?.state === "terminated"), "reader sees the end");
    expect(await view.status("v")).toMatchObject({ state: "terminated", status: "succeeded", step: 1 });
    expect(dec((await view.outcome("v"))!.result)).toBe("x");
    await env.stop();
  });
});

describe("outcome records belong to one termination", () => {
  it("a re-submitted run id does not report the earlier run's outcome", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(enc(`result of ${dec(s.payload)}`))));
    await env.runtime.submit({ input: enc("first"), runId: "same" });
    expect(dec((await env.runtime.wait("same")).outcome!.result)).toBe("result of first");
    await env.worker!.shutdown();
    await env.runtime.submit({ input: enc("second"), runId: "same" });
    expect(await env.runtime.outcome("same")).toBeNull(); // active again
    expect(await env.runtime.cancel("same")).toBe(true); // pending: terminated without a worker
    const end = await env.runtime.wait("same");
    expect(end.termination.status).toBe("cancelled");
    // The memo still holds the first run's record, which is not this termination's: the outcome is the cancel's.
    expect(end.outcome).toEqual({ runId: "same", status: "cancelled", errorKind: "cancelled", finalStep: 0, headers: {} });
    await env.queue.close();
  });
});

describe("the run result record is read once per run end", () => {
  it("wait then outcome cost one read, also where the worker wrote it; a record read again later, or cleared, comes from the store", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "wf", { flushIntervalMs: 1, clock: new MockClock(1_700_000_000_000) });
    // The queue reads the store itself; the runtimes' memo reads go through the counting wrappers, so the counts are theirs alone.
    const workerReads = withCounting(store);
    const runtime = WorkflowRuntime.builder(
      queue,
      workerReads,
      // A result too large for the terminal record: it is written as a run result record.
      runnerOf(async (s) => StepOutcome.succeed(overInline(`r:${dec(s.payload)}`))),
      NoopTerminalHook,
    ).build();
    const worker = runtime.spawn();
    try {
      await runtime.submit({ input: enc("a"), runId: "a" });
      await until(async () => (await runtime.status("a"))?.state === "terminated", "run a ends");
      workerReads.reset();
      expect(dec((await runtime.wait("a")).outcome!.result).trimEnd()).toBe("r:a");
      expect(dec((await runtime.outcome("a"))!.result).trimEnd()).toBe("r:a");
      // The worker of this process wrote the record and hands it to the wait; the outcome reads it once.
      expect(workerReads.counts.gets).toBe(1);

      const otherReads = withCounting(store);
      const other = WorkflowRuntime.builder(
        queue,
        otherReads,
        runnerOf(async () => StepOutcome.fail("unused")),
        NoopTerminalHook,
      ).build();
      expect(dec((await other.wait("a")).outcome!.result).trimEnd()).toBe("r:a");
      expect(dec((await other.outcome("a"))!.result).trimEnd()).toBe("r:a");
      expect(otherReads.counts.gets).toBe(1);
      // Each record read answers one more question, not every later one: a third asks the store.
      expect(dec((await other.outcome("a"))!.result).trimEnd()).toBe("r:a");
      expect(otherReads.counts.gets).toBe(2);

      // What a caller does with an answer does not change the next one; a clear of the run's memo is seen at once.
      const memos = new MemoStore(otherReads, "workflow-steps-memo");
      const view = new WorkflowView(queue.view(), memos);
      (await view.outcome("a"))!.result!.fill(0);
      expect(dec((await view.outcome("a"))!.result).trimEnd()).toBe("r:a");
      expect(await view.outcome("a")).not.toBeNull();
      expect(await memos.clearMemosForRun("a")).toBeGreaterThan(0);
      expect(await view.outcome("a")).toBeNull();
      expect(await view.status("a")).toMatchObject({ state: "terminated", status: "succeeded" });
    } finally {
      await worker.shutdown();
      await queue.close();
    }
  });
});
