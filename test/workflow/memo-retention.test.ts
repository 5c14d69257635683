/**
 * @module Memo retention: a terminated run's memo entries, replay records,
 * terminal record and marker go a window after termination, also for runs
 * that expired while no worker ran.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, RunNotFoundError, StepOutcome, WorkflowRuntime, type WorkflowRuntimeBuilder } from "taquba";
import { advanceUntil, enc, openEnv, runnerOf, settle, until } from "./helpers.js";

async function objectCount(store: { list(p: string): AsyncIterable<unknown> }, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of store.list(prefix)) n++;
  return n;
}

describe("memo retention", () => {
  it("sweeps memo entries, replay records, terminal records and markers a window after termination", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("m", enc("1"));
        await s.runMemo.put("r", enc("2"));
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.memoRetention(60_000).stepOutputReplay().pollIntervalMs(1_000) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "old" });
    await env.runtime.wait("old");
    expect(await objectCount(env.store, "workflow-steps-memo/memos/old/")).toBe(3); // two entries + the run result record
    expect(await objectCount(env.store, "workflow-steps-memo/step-outputs/old/")).toBe(1);
    expect((await env.queue.kvScan("workflow/terminals/")).entries).toHaveLength(1);
    env.clock.advance(30_000);
    await env.runtime.submit({ input: enc("x"), runId: "young" });
    await env.runtime.wait("young");
    const t0 = env.clock.now() - 30_000;
    env.clock.advance(30_000);
    // Removed within one poll interval (1 s) of the end of its window.
    await advanceUntil(env.clock, t0 + 61_000, async () => (await env.runtime.status("old")) === null, "old swept");
    expect(await objectCount(env.store, "workflow-steps-memo/memos/old/")).toBe(0);
    expect(await objectCount(env.store, "workflow-steps-memo/step-outputs/old/")).toBe(0);
    await expect(env.runtime.wait("old")).rejects.toBeInstanceOf(RunNotFoundError);
    expect(await env.runtime.status("young")).toMatchObject({ state: "terminated" });
    expect(await objectCount(env.store, "workflow-steps-memo/memos/young/")).toBe(3);
    await until(async () => (await env.queue.kvScan("workflow/terminals/")).entries.length === 1, "old marker removed");
    await advanceUntil(env.clock, t0 + 91_000, async () => (await env.runtime.status("young")) === null, "young swept");
    await env.stop();
  });

  it("keeps everything without retention, and never touches in-flight runs", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("m", enc("1"));
        if (s.runId === "slow") await gate;
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.memoRetention(1_000).pollIntervalMs(100) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "slow" });
    await until(async () => (await objectCount(env.store, "workflow-steps-memo/memos/slow/")) === 1, "memo written");
    env.clock.advance(10_000);
    await settle();
    expect(await objectCount(env.store, "workflow-steps-memo/memos/slow/")).toBe(1);
    release();
    await env.runtime.wait("slow");
    await env.stop();

    const env2 = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    await env2.runtime.submit({ input: enc("x"), runId: "kept" });
    await env2.runtime.wait("kept");
    env2.clock.advance(365 * 86_400_000);
    await settle();
    expect(await env2.runtime.status("kept")).toMatchObject({ state: "terminated" });
    expect((await env2.queue.kvScan("workflow/terminals/")).entries).toHaveLength(0);
    await env2.stop();
  });

  it("sweeps at start-up what expired while no worker ran", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const runner = runnerOf(async (s) => {
      await s.memo.put("m", enc("1"));
      return StepOutcome.succeed(s.payload);
    });
    const configure = (b: WorkflowRuntimeBuilder) => b.memoRetention(60_000).pollIntervalMs(3_600_000);
    const env = await openEnv(runner, { store, clock, configure });
    await env.runtime.submit({ input: enc("x"), runId: "gone" });
    await env.runtime.wait("gone");
    await env.stop();
    clock.advance(61_000);
    const env2 = await openEnv(runner, { store, clock, configure });
    await until(async () => (await env2.runtime.status("gone")) === null, "swept at start");
    expect(await objectCount(store, "workflow-steps-memo/memos/gone/")).toBe(0);
    await env2.stop();
  });

  it("two runtimes over one queue with their own memo prefixes each sweep their own runs", async () => {
    const runner = runnerOf(async (s) => {
      await s.memo.put("m", enc("1"));
      return StepOutcome.succeed(s.payload);
    });
    const env = await openEnv(runner, { configure: (b) => b.memoRetention(60_000).pollIntervalMs(1_000) });
    const other = WorkflowRuntime.builder(env.queue, env.store, runner, NoopTerminalHook)
      .queueName("other-steps")
      .memoPrefix("other-memo")
      .memoRetention(60_000)
      .pollIntervalMs(1_000)
      .build();
    const otherWorker = other.spawn();
    await env.runtime.submit({ input: enc("x"), runId: "mine" });
    await other.submit({ input: enc("x"), runId: "theirs" });
    await env.runtime.wait("mine");
    await other.wait("theirs");
    expect(await objectCount(env.store, "other-memo/memos/theirs/")).toBe(2);
    const t0 = env.clock.now();
    env.clock.advance(60_000);
    await advanceUntil(
      env.clock,
      t0 + 61_000,
      async () => (await env.runtime.status("mine")) === null && (await other.status("theirs")) === null,
      "both swept",
    );
    expect(await objectCount(env.store, "other-memo/memos/theirs/")).toBe(0);
    expect(await objectCount(env.store, "workflow-steps-memo/memos/mine/")).toBe(0);
    await otherWorker.shutdown();
    await env.stop();
  });
});
