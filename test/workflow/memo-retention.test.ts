/**
 * @module Memo retention: a terminated run's memo entries, replay records,
 * terminal record and marker go a window after termination, also for runs
 * that expired while no worker ran.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, RunNotFoundError, StepOutcome, WorkflowRuntime, type WorkflowRuntimeBuilder } from "taquba";
import { advanceUntil, enc, openEnv, overInline, runnerOf, settle, until } from "./helpers.js";
import { runResultPrefix } from "../../runtime/workflow/records/kv-keys.js";

async function objectCount(store: { list(p: string): AsyncIterable<unknown> }, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of store.list(prefix)) n++;
  return n;
}

/** The objects a run left under a memo prefix: its memo entries and its run result records. */
async function runObjects(store: { list(p: string): AsyncIterable<unknown> }, memoPrefix: string, runId: string): Promise<number> {
  return (await objectCount(store, `${memoPrefix}/memos/${runId}/`)) + (await objectCount(store, runResultPrefix(memoPrefix, runId)));
}

describe("memo retention", () => {
  it("sweeps memo entries, replay records, terminal records and markers a window after termination", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("m", enc("1"));
        await s.runMemo.put("r", enc("2"));
        // Too large for the terminal record: a run result record is swept with the memo.
        return StepOutcome.succeed(overInline("done"));
      }),
      { configure: (b) => b.memoRetention(60_000).stepOutputReplay().pollIntervalMs(1_000) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "old" });
    await env.runtime.wait("old");
    expect(await objectCount(env.store, "workflow-steps-memo/memos/old/")).toBe(2);
    expect(await runObjects(env.store, "workflow-steps-memo", "old")).toBe(3); // two entries + the run result record
    expect(await objectCount(env.store, "workflow-steps-memo/step-outputs/old/")).toBe(1);
    expect((await env.queue.kvScan("workflow/terminals/")).entries).toHaveLength(1);
    env.clock.advance(30_000);
    await env.runtime.submit({ input: enc("x"), runId: "young" });
    await env.runtime.wait("young");
    const t0 = env.clock.now() - 30_000;
    env.clock.advance(30_000);
    // Removed within one poll interval (1 s) of the end of its window.
    await advanceUntil(env.clock, t0 + 61_000, async () => (await env.runtime.status("old")) === null, "old swept");
    expect(await runObjects(env.store, "workflow-steps-memo", "old")).toBe(0);
    expect(await objectCount(env.store, "workflow-steps-memo/step-outputs/old/")).toBe(0);
    await expect(env.runtime.wait("old")).rejects.toBeInstanceOf(RunNotFoundError);
    expect(await env.runtime.status("young")).toMatchObject({ state: "terminated" });
    expect(await runObjects(env.store, "workflow-steps-memo", "young")).toBe(3);
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
    expect(await runObjects(store, "workflow-steps-memo", "gone")).toBe(0);
    await env2.stop();
  });

  it("two runtimes over one queue with their own memo prefixes each sweep their own runs", async () => {
    const runner = runnerOf(async (s) => {
      await s.memo.put("m", enc("1"));
      return StepOutcome.succeed(overInline("done"));
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
    expect(await runObjects(env.store, "other-memo", "theirs")).toBe(2);
    const t0 = env.clock.now();
    env.clock.advance(60_000);
    await advanceUntil(
      env.clock,
      t0 + 61_000,
      async () => (await env.runtime.status("mine")) === null && (await other.status("theirs")) === null,
      "both swept",
    );
    expect(await runObjects(env.store, "other-memo", "theirs")).toBe(0);
    expect(await runObjects(env.store, "workflow-steps-memo", "mine")).toBe(0);
    await otherWorker.shutdown();
    await env.stop();
  });
});
describe("memo retention over damaged records", () => {
  it("reports a damaged marker once with its run, skips it and sweeps every other run, past a page of them", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("m", enc("1"));
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.memoRetention(60_000).pollIntervalMs(3_600_000) },
    );
    for (const id of ["damaged", "kept-1", "kept-2"]) {
      await env.runtime.submit({ input: enc("x"), runId: id });
      await env.runtime.wait(id);
    }
    const markers = (await env.queue.kvScan("workflow/terminals/")).entries;
    expect(markers).toHaveLength(3);
    const damaged = markers.find((m) => m.key.endsWith("damaged"))!;
    await env.queue.kvPut(damaged.key, enc("not a marker"));
    // More damaged markers than a pass reads per page, ahead of the good ones (run ids that sort first).
    const stem = damaged.key.slice(0, -"damaged".length);
    for (let i = 0; i < 300; i++) await env.queue.kvPut(`${stem}broken-${String(i).padStart(3, "0")}`, new Uint8Array([0xc1]));
    env.clock.advance(120_000);
    const damagedMemo = await runObjects(env.store, "workflow-steps-memo", "damaged");
    expect(damagedMemo).toBeGreaterThan(0);

    expect(await env.runtime.sweepMemos()).toBe(2);
    expect(await env.runtime.status("kept-1")).toBeNull();
    expect(await env.runtime.status("kept-2")).toBeNull();
    expect(await runObjects(env.store, "workflow-steps-memo", "kept-1")).toBe(0);
    // The damaged run is kept, with its memo, and reported in its own terms.
    expect(await env.runtime.status("damaged")).toMatchObject({ state: "terminated", status: "succeeded" });
    expect(await runObjects(env.store, "workflow-steps-memo", "damaged")).toBe(damagedMemo);
    const reports = env.logged as Array<{ runId?: string }>;
    expect(reports).toHaveLength(301);
    expect(reports.some((r) => r.runId === "damaged")).toBe(true);

    // Reported once: a later pass skips it silently, and still sweeps runs that end later.
    await env.runtime.submit({ input: enc("x"), runId: "later" });
    await env.runtime.wait("later");
    env.clock.advance(120_000);
    expect(await env.runtime.sweepMemos()).toBe(1);
    expect(await env.runtime.status("later")).toBeNull();
    expect(env.logged).toHaveLength(301);
    await env.stop();
  });

  it("reports a marker naming no run id (another run's step folder) and sweeps the rest, clearing nothing of the run it points into", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("m", enc("1"));
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.memoRetention(60_000).pollIntervalMs(3_600_000) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "a" });
    await env.runtime.wait("a");
    const [marker] = (await env.queue.kvScan("workflow/terminals/")).entries;
    // A damaged marker of a run "a/0": as a folder, run a's step 0.
    await env.queue.kvPut(`${marker!.key}/0`, marker!.value);
    await env.queue.kvDelete(marker!.key);
    await env.runtime.submit({ input: enc("x"), runId: "kept" });
    await env.runtime.wait("kept");
    env.clock.advance(120_000);
    const aMemo = await runObjects(env.store, "workflow-steps-memo", "a");
    expect(aMemo).toBeGreaterThan(0);

    expect(await env.runtime.sweepMemos()).toBe(1);
    expect(await env.runtime.status("kept")).toBeNull();
    expect(await runObjects(env.store, "workflow-steps-memo", "a")).toBe(aMemo);
    expect((env.logged as Array<{ runId?: string }>).some((r) => r.runId === "a/0")).toBe(true);
    // A later pass skips it again and still works.
    expect(await env.runtime.sweepMemos()).toBe(0);
    await env.stop();
  });

  it("does not count the removal of a stale marker (a run submitted again since) as a swept run", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("m", enc("1"));
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.memoRetention(60_000).pollIntervalMs(3_600_000) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "again" });
    await env.runtime.wait("again");
    env.clock.advance(30_000);
    // The same id submitted again after its end: a new run, with its own marker; the first end's marker stays.
    await env.runtime.submit({ input: enc("x"), runId: "again" });
    await env.runtime.wait("again");
    expect((await env.queue.kvScan("workflow/terminals/")).entries).toHaveLength(2);
    env.clock.advance(40_000);
    // The first marker expired; the run it names ended again since and is kept.
    expect(await env.runtime.sweepMemos()).toBe(0);
    expect((await env.queue.kvScan("workflow/terminals/")).entries).toHaveLength(1);
    expect(await env.runtime.status("again")).toMatchObject({ state: "terminated" });
    expect(await objectCount(env.store, "workflow-steps-memo/memos/again/")).toBeGreaterThan(0);
    env.clock.advance(30_000);
    expect(await env.runtime.sweepMemos()).toBe(1);
    expect(await env.runtime.status("again")).toBeNull();
    await env.stop();
  });

  it("skips a run whose terminal record is damaged", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { configure: (b) => b.memoRetention(60_000).pollIntervalMs(3_600_000) },
    );
    for (const id of ["a", "b"]) {
      await env.runtime.submit({ input: enc("x"), runId: id });
      await env.runtime.wait(id);
    }
    await env.queue.kvPut("workflow/outcomes/workflow-steps/a", enc("garbage"));
    env.clock.advance(120_000);
    expect(await env.runtime.sweepMemos()).toBe(1);
    expect(await env.runtime.status("b")).toBeNull();
    expect(env.logged).toHaveLength(1);
    expect(env.logged[0]).toMatchObject({ runId: "a" });
    await env.stop();
  });
});
