/**
 * @module Dead-step reconciliation: a run whose step job the reaper or
 * recovery dead-lettered still terminates, with its notification.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome, type RunOutcome, type StepRunner, type TerminalHook } from "taquba";
import { enc, hangingRunner, openEnv, until } from "./helpers.js";

describe("dead-step reconciliation", () => {
  it("terminates a run whose step the reaper dead-lettered, with the notification", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runner = hangingRunner(gate);
    const seen: RunOutcome[] = [];
    const hook: TerminalHook = {
      async onTermination(o) {
        seen.push(o);
      },
    };
    const env = await openEnv(runner, {
      hook,
      queueOptions: { queueConfigs: { "workflow-steps": { leaseMs: 1_000, maxAttempts: 1 } } },
    });
    await env.runtime.submit({ input: enc("x"), runId: "reaped" });
    await until(() => runner.calls === 1, "step running");
    env.clock.advance(10_000); // past the lease and its margin: the reaper dead-letters (attempts exhausted)
    const end = await env.runtime.wait("reaped");
    expect(end.termination).toMatchObject({ status: "failed", errorKind: "dead_lettered", finalStep: 0 });
    // No worker recorded an outcome: it is the termination.
    expect(end.outcome).toMatchObject({ runId: "reaped", status: "failed", errorKind: "dead_lettered", finalStep: 0 });
    expect(end.outcome?.result).toBeUndefined();
    await until(() => seen.length === 1, "notification");
    expect(seen[0]).toMatchObject({ runId: "reaped", status: "failed" });
    expect(await env.runtime.cancel("reaped")).toBe(false);
    release();
    // Shutdown waits for the late step to return and its settlement to be tried.
    await env.worker!.shutdown();
    // The late outcome of the reaped delivery is not committed over the termination.
    const after = await env.runtime.wait("reaped");
    expect(after.termination).toMatchObject({ status: "failed", errorKind: "dead_lettered", finalStep: 0 });
    expect(after.outcome).toEqual(end.outcome);
    expect(await env.runtime.status("reaped")).toMatchObject({ state: "terminated", status: "failed" });
    expect(seen).toHaveLength(1);
    expect(runner.calls).toBe(1);
    await env.stop();
  });

  it("terminates a run whose step recovery dead-lettered when the queue was reopened", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runner = hangingRunner(gate);
    const queueOptions = { queueConfigs: { "workflow-steps": { maxAttempts: 1 } } };
    const env = await openEnv(runner, { store, clock, queueOptions });
    await env.runtime.submit({ input: enc("x"), runId: "crashed" });
    await until(() => runner.calls === 1, "step running");
    await env.queue.close(); // the process "dies" with the step claimed
    release();
    await env.worker!.shutdown();

    const env2 = await openEnv(runner, { store, clock, queueOptions, start: false });
    expect(env2.queue.recovery.deadLettered).toHaveLength(1);
    // Before a worker reconciles, the run is not terminated and cannot be cancelled.
    expect((await env2.runtime.status("crashed"))?.state).toBe("running");
    expect(await env2.runtime.cancel("crashed")).toBe(false);
    const worker = env2.runtime.spawn();
    const end = await env2.runtime.wait("crashed");
    expect(end.termination).toMatchObject({ status: "failed", errorKind: "dead_lettered" });
    await worker.shutdown();
    // A resubmission starts a new run instead of being taken for a duplicate.
    const again = await env2.runtime.submit({ input: enc("y"), runId: "crashed" });
    expect(again.newlySubmitted).toBe(true);
    await env2.stop();
  });
});

describe("abandoned claims", () => {
  const crashThenReopen = async (maxAttempts: number) => {
    const store = new MemoryStore();
    const clock = new MockClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const hanging = hangingRunner(gate);
    const queueOptions = { queueConfigs: { "workflow-steps": { maxAttempts } } };
    const env = await openEnv(hanging, { store, clock, queueOptions });
    await env.runtime.submit({ input: enc("x"), runId: "abandoned" });
    await until(() => hanging.calls === 1, "step running");
    await env.queue.close(); // the process dies with the step claimed
    release();
    await env.worker!.shutdown();
    return openEnv({ runStep: async () => StepOutcome.succeed(enc("second try")) }, { store, clock, queueOptions });
  };

  it("a claim its process abandoned counts as an attempt and shows as interrupted, and the step runs again", async () => {
    const env = await crashThenReopen(3);
    const end = await env.runtime.wait("abandoned");
    expect(end.termination.status).toBe("succeeded");
    const attempts = (await env.runtime.inspectRun("abandoned"))!.steps[0]!.attempts;
    expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, "interrupted"],
      [2, "succeeded"],
    ]);
    expect(attempts[0]!.error).toContain("the process holding the claim stopped");
    await env.stop();
  });

  it("an abandoned last attempt dead-letters the step: the run fails, its attempt shows as interrupted", async () => {
    const env = await crashThenReopen(1);
    const end = await env.runtime.wait("abandoned");
    expect(end.termination).toMatchObject({ status: "failed", errorKind: "dead_lettered" });
    const attempts = (await env.runtime.inspectRun("abandoned"))!.steps[0]!.attempts;
    expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, "interrupted"]]);
    await env.stop();
  });

  it("an expired lease counts as an attempt and shows as interrupted", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    const runner: StepRunner = {
      async runStep() {
        if (++calls === 1) await gate;
        return StepOutcome.succeed(enc(`call ${calls}`));
      },
    };
    const env = await openEnv(runner, { queueOptions: { queueConfigs: { "workflow-steps": { leaseMs: 1_000, maxAttempts: 2 } } } });
    await env.runtime.submit({ input: enc("x"), runId: "stalled" });
    await until(() => calls === 1, "step running");
    env.clock.advance(10_000); // past the lease and its margin: the reaper requeues the step
    const end = await env.runtime.wait("stalled");
    expect(end.termination.status).toBe("succeeded");
    const attempts = (await env.runtime.inspectRun("stalled"))!.steps[0]!.attempts;
    expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, "interrupted"],
      [2, "succeeded"],
    ]);
    expect(attempts[0]!.error).toContain("the lease expired");
    release();
    await env.stop();
  });
});
