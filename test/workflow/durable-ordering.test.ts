/**
 * @module A runner never sees a run's next step before the previous step's
 * settlement is durable.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { enc, holdableStore, openEnv, runnerOf, settle, until } from "./helpers.js";

describe("step ordering against durability", () => {
  it("a runner never sees step k+1 before step k's settlement is durable", async () => {
    const store = holdableStore();
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => (releaseA = r));
    const log: string[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        log.push(`${s.runId}:${s.stepNumber}`);
        if (s.runId === "a" && s.stepNumber === 0) await gateA;
        // a's step-0 ack is applied in memory by now: its WAL write is being held.
        if (s.runId === "b") await until(() => store.held > 0, "a's ack written");
        return s.stepNumber === 0 ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
      }),
      // One slot: every settlement frees the full worker, which claims at once.
      { store, start: false, configure: (b) => b.maxConcurrentSteps(1) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "a" });
    await env.runtime.submit({ input: enc("x"), runId: "b" });
    const worker = env.runtime.spawn();
    await until(() => log.includes("a:0"), "a's step 0 running");
    store.hold();
    releaseA(); // a's ack applies in memory but cannot become durable; the freed slot claims b's step 0
    await until(() => log.includes("b:0"), "b's step 0 running");
    // a's step 1 is in memory now (pending beside b's claimed step 0)...
    await until(async () => (await env.queue.view().stats("workflow-steps")).pending === 1, "a's step 1 in memory");
    // ...and b's settlement, behind a's held write, keeps the one slot: nothing runs it.
    await settle();
    expect(store.held).toBeGreaterThan(0);
    expect(log).not.toContain("a:1");
    store.release();
    await env.runtime.wait("a");
    await env.runtime.wait("b");
    expect(log).toContain("a:1");
    await worker.shutdown();
    await env.stop();
  });
});
