/**
 * @module Dead-step reconciliation: a run whose step job the reaper or
 * recovery dead-lettered still terminates, with its notification.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome, type RunOutcome, type StepRunner, type TerminalHook } from "taquba";
import { enc, openEnv, until } from "./helpers.js";

function hangingRunner(release: Promise<void>): StepRunner & { calls: number } {
  const r = {
    calls: 0,
    async runStep() {
      r.calls++;
      await release;
      return StepOutcome.succeed(enc("late"));
    },
  };
  return r;
}

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
    expect(end.outcome).toBeNull();
    await until(() => seen.length === 1, "notification");
    expect(seen[0]).toMatchObject({ runId: "reaped", status: "failed" });
    expect(await env.runtime.cancel("reaped")).toBe(false);
    release();
    // Shutdown waits for the late step to return and its settlement to be tried.
    await env.worker!.shutdown();
    // The late outcome of the reaped delivery is not committed over the termination.
    const after = await env.runtime.wait("reaped");
    expect(after.termination).toMatchObject({ status: "failed", errorKind: "dead_lettered", finalStep: 0 });
    expect(after.outcome).toBeNull();
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
    // The run id names the failed run: a resubmission answers it, retryRun runs it again.
    const again = await env2.runtime.submit({ input: enc("x"), runId: "crashed" });
    expect(again.newlySubmitted).toBe(false);
    expect(await env2.runtime.status("crashed")).toMatchObject({ state: "terminated", status: "failed" });
    await env2.stop();
  });
});
