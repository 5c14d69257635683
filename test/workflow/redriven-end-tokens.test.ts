/**
 * @module Each end of a run is told once, a redriven dead step's second end
 * included. A redrive requeues the dead step job itself with fresh
 * attempts, so before ends had their own tokens its second end repeated
 * the first's (`<job id>:<attempt>`, or `dead:<job id>`): while the first
 * end's notification still waited for a retry, the second one was dropped
 * as its duplicate, and a second dead-step reconciliation did not end the
 * run at all. Status, outcome and history read in this process and in
 * another report the second end.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, QueueReader, StepError, WorkflowView, type RunnerHandle, type StepRunner, type WorkflowRuntimeBuilder } from "taquba";
import { readRunDetail } from "../../operator/inspect/run-detail.js";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { advanceUntil, enc, type Env, openEnv, recordingHook, until } from "./helpers.js";

const STEPS = "workflow-steps";

/** A runner whose every delivery waits until released, then fails permanently with its number. */
function gatedRunner(): StepRunner & { calls: number; release(n: number): void; releaseAll(): void } {
  const gates: (() => void)[] = [];
  const r = {
    calls: 0,
    async runStep() {
      const n = ++r.calls;
      await new Promise<void>((resolve) => gates.push(resolve));
      throw StepError.permanent(`end ${n}`);
    },
    release(n: number) {
      gates[n - 1]?.();
    },
    releaseAll() {
      for (const g of gates) g();
    },
  };
  return r;
}

async function tokenOf(env: Env, runId: string): Promise<string> {
  const key = terminalRecordKey(STEPS, runId);
  return decodeTerminalRecord((await env.queue.kvGet(key))!, key).token;
}

/** Notification jobs of the step queue not claimed yet. */
async function pendingNotifications(env: Env): Promise<number> {
  const jobs = (await env.queue.view().listJobs(STEPS, "pending")).items;
  return jobs.filter((j) => j.headers["workflow.terminal"] === "1").length;
}

// One step at a time: the requeued step job (its enqueue's place kept) is claimed before the first end's
// notification, which stays pending, holding its dedup key, while the second end commits.
const oneAtATime = (b: WorkflowRuntimeBuilder) => b.maxConcurrentSteps(1);

describe("a redriven dead step's second end", () => {
  it("a worker's dead-letter: the second end has its own token and its own notification", async () => {
    const runner = gatedRunner();
    const hook = recordingHook();
    const store = new MemoryStore();
    const env = await openEnv(runner, { hook, store, configure: oneAtATime });
    const reader = await QueueReader.open(store, "wf");
    let worker: RunnerHandle | undefined;
    try {
      await env.runtime.submit({ input: enc("x"), runId: "w" });
      await until(() => runner.calls === 1, "the step running");
      // The worker stops with the step's end: its notification is left pending.
      const stopped = env.worker!.shutdown();
      runner.release(1);
      await stopped;
      expect((await env.runtime.wait("w")).termination).toMatchObject({ status: "failed", error: "end 1" });
      const first = await tokenOf(env, "w");
      expect(await pendingNotifications(env)).toBe(1);

      await env.runtime.retryRun("w");
      worker = env.runtime.spawn();
      await until(() => runner.calls === 2, "the requeued step running");
      expect(await pendingNotifications(env)).toBe(1);
      runner.release(2);
      const second = await env.runtime.wait("w");
      expect(second.termination).toMatchObject({ status: "failed", error: "end 2" });
      expect(second.outcome).toMatchObject({ status: "failed", error: "end 2" });
      expect(await tokenOf(env, "w")).not.toBe(first);

      await until(() => hook.seen.length >= 2, "both notifications");
      expect(hook.seen.map((o) => o.error)).toEqual(["end 1", "end 2"]);

      // This process and another one read the second end.
      expect(await env.runtime.status("w")).toMatchObject({ state: "terminated", status: "failed" });
      expect(await env.runtime.outcome("w")).toMatchObject({ status: "failed", error: "end 2" });
      const history = await env.runtime.inspectRun("w");
      expect(history?.redrives).toHaveLength(1);
      expect(history?.redrives[0]?.replaced).toMatchObject({ status: "failed", error: "end 1" });
      expect(history?.end).toMatchObject({ status: "failed", error: "end 2" });
      const view = new WorkflowView(reader, new MemoStore(store, "workflow-steps-memo"));
      await reader.refresh();
      expect(await view.status("w")).toMatchObject({ state: "terminated", status: "failed" });
      expect(await view.outcome("w")).toMatchObject({ status: "failed", error: "end 2" });
      // The operator's run detail, over the same reader.
      expect(await readRunDetail(view, reader, "w")).toMatchObject({ state: "failed", runtimeState: "terminated", error: "end 2" });
    } finally {
      runner.releaseAll();
      await worker?.shutdown();
      await reader.close();
      await env.stop();
    }
  });

  it("dead-step reconciliation: the requeued job dead-lettered again ends the run again, told once more", async () => {
    const runner = gatedRunner();
    const hook = recordingHook();
    const env = await openEnv(runner, { hook, configure: oneAtATime, queueOptions: { queueConfigs: { [STEPS]: { leaseMs: 1_000, maxAttempts: 1 } } } });
    try {
      await env.runtime.submit({ input: enc("x"), runId: "d" });
      await until(() => runner.calls === 1, "the step running");
      // Past the lease and its margin: the reaper dead-letters the step, reconciliation ends the run. The
      // reaped delivery still holds the worker's one slot, so the end's notification stays pending.
      await advanceUntil(env.clock, env.clock.now() + 60_000, async () => (await env.runtime.status("d"))?.state === "terminated", "the first end");
      const first = await tokenOf(env, "d");
      expect(await pendingNotifications(env)).toBe(1);

      await env.runtime.retryRun("d");
      // The reaped delivery's late return is refused, and frees the slot for the requeued job.
      runner.release(1);
      await until(() => runner.calls === 2, "the requeued step running");
      expect(await pendingNotifications(env)).toBe(1);
      await advanceUntil(env.clock, env.clock.now() + 60_000, async () => (await env.runtime.status("d"))?.state === "terminated", "the second end");
      expect(await tokenOf(env, "d")).not.toBe(first);
      expect((await env.runtime.wait("d")).termination).toMatchObject({ status: "failed", errorKind: "dead_lettered" });
      runner.release(2);

      await until(() => hook.seen.length >= 2, "both notifications");
      expect(hook.seen.map((o) => [o.runId, o.errorKind])).toEqual([
        ["d", "dead_lettered"],
        ["d", "dead_lettered"],
      ]);
      const history = await env.runtime.inspectRun("d");
      expect(history?.redrives).toHaveLength(1);
      // The dead step's attempts, read from its job through the new token, as for the first end.
      expect(history?.steps.at(-1)).toMatchObject({ step: 0, retryable: true });
      expect(history?.steps.at(-1)?.attempts.length).toBeGreaterThan(0);
    } finally {
      runner.releaseAll();
      await env.stop();
    }
  });

  it("dead-step reconciliation: a step redriven more times than its attempt history keeps entries ends the run under a new token each time", async () => {
    const runner = gatedRunner();
    const env = await openEnv(runner, { configure: oneAtATime, queueOptions: { queueConfigs: { [STEPS]: { leaseMs: 1_000, maxAttempts: 1 } } } });
    const tokens = new Set<string>();
    try {
      await env.runtime.submit({ input: enc("x"), runId: "many" });
      // Each round adds entries to the step job's history, bounded at 32: its requeued entries stop counting the requeues.
      const rounds = 20;
      for (let i = 1; i <= rounds; i++) {
        if (i > 1) {
          await env.runtime.retryRun("many");
          runner.release(i - 1);
        }
        await until(() => runner.calls === i, `delivery ${i} running`);
        await advanceUntil(env.clock, env.clock.now() + 60_000, async () => (await env.runtime.status("many"))?.state === "terminated", `end ${i}`);
        tokens.add(await tokenOf(env, "many"));
      }
      expect(tokens.size).toBe(rounds);
      expect((await env.queue.view().attemptHistory((await env.queue.view().listJobs(STEPS, "dead")).items[0]!.id)).length).toBeLessThanOrEqual(32);
    } finally {
      runner.releaseAll();
      await env.stop();
    }
  }, 60_000);

  it("memo retention: the first end's marker does not sweep the run its second end left", async () => {
    const retention = 60_000;
    let n = 0;
    const env = await openEnv(
      {
        async runStep() {
          throw StepError.permanent(`end ${++n}`);
        },
      },
      { configure: (b) => b.memoRetention(retention).pollIntervalMs(3_600_000) },
    );
    try {
      await env.runtime.submit({ input: enc("x"), runId: "m" });
      await env.runtime.wait("m");
      env.clock.advance(retention / 2);
      await env.runtime.retryRun("m");
      expect((await env.runtime.wait("m")).termination).toMatchObject({ error: "end 2" });
      // The first end's retention ran out, not the second's: its marker is stale, the run kept.
      env.clock.advance(retention / 2 + 1);
      expect(await env.runtime.sweepMemos()).toBe(0);
      expect(await env.runtime.status("m")).toMatchObject({ state: "terminated", status: "failed" });
      expect(await env.runtime.outcome("m")).toMatchObject({ error: "end 2" });
      env.clock.advance(retention / 2);
      expect(await env.runtime.sweepMemos()).toBe(1);
      expect(await env.runtime.status("m")).toBeNull();
    } finally {
      await env.stop();
    }
  });
});
