/**
 * @module Step-output replay: a recorded outcome is replayed after a crash
 * before the ack, keeping its delay's schedule; without replay the runner
 * runs again.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";

describe("step-output replay", () => {
  it("replays a recorded outcome and its effects after a crash before the ack, keeping the delay's schedule", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const calls: number[] = [];
    let crash: (() => Promise<void>) | undefined;
    const runner: StepRunner = {
      async runStep(s) {
        calls.push(s.stepNumber);
        if (s.stepNumber === 0) {
          s.effects.put("app/status", enc("step0 done"));
          await crash?.(); // the process dies between the outcome and its acknowledgement
          return StepOutcome.continueAfter(enc("next"), 10_000);
        }
        return StepOutcome.succeed(s.payload);
      },
    };
    const env = await openEnv(runner, { store, clock, configure: (b) => b.stepOutputReplay() });
    crash = () => env.queue.close();
    const t0 = clock.now();
    await env.runtime.submit({ input: enc("in"), runId: "r" });
    await until(() => env.queue.closed, "queue closed mid-step");
    await env.worker!.shutdown();
    expect(calls).toEqual([0]);

    crash = undefined;
    clock.advance(6_000);
    const env2 = await openEnv(runner, { store, clock, configure: (b) => b.stepOutputReplay() });
    await until(async () => (await env2.runtime.status("r"))?.step === 1, "step 1 scheduled");
    expect(calls).toEqual([0]); // replayed, not re-run
    expect(dec(await env2.queue.kvGet("app/status"))).toBe("step0 done");
    const step1 = (await env2.queue.view().listJobs("workflow-steps", "scheduled")).items[0]!;
    expect(step1.runAt).toBe(t0 + 10_000);
    clock.advance(4_000);
    expect(dec((await env2.runtime.wait("r")).outcome!.result)).toBe("next");
    expect(calls).toEqual([0, 1]);
    await env2.stop();
  });

  it("without replay the runner runs again after the same crash", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const calls: number[] = [];
    let crash: (() => Promise<void>) | undefined;
    const runner: StepRunner = {
      async runStep(s) {
        calls.push(s.stepNumber);
        await crash?.();
        return StepOutcome.succeed(s.payload);
      },
    };
    const env = await openEnv(runner, { store, clock });
    crash = () => env.queue.close();
    await env.runtime.submit({ input: enc("in"), runId: "r" });
    await until(() => env.queue.closed, "closed");
    await env.worker!.shutdown();
    crash = undefined;
    const env2 = await openEnv(runner, { store, clock });
    await env2.runtime.wait("r");
    expect(calls).toEqual([0, 0]);
    const keys: string[] = [];
    for await (const o of store.list("workflow-steps-memo/step-outputs/")) keys.push(o.key);
    expect(keys).toEqual([]);
    await env2.stop();
  });
});
