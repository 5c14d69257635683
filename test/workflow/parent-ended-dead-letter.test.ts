/**
 * @module The job a parent's termination enqueues to cancel its running
 * children (policy `cancel`) can be dead-lettered by the queue (its lease
 * ran out past its attempt limit, which it takes from the parent's steps).
 * The children must still be cancelled, by dead-step reconciliation, and
 * the parent's child bookkeeping dropped.
 */
import { describe, expect, it } from "vitest";
import { MockClock, StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";

const PARENT_ENDED = "workflow.parent_ended";
/** The queue logs the dead-letter this test causes on purpose. */
const quiet = { queueOptions: { logger: { error: () => undefined } } };

/** A parent that starts one child and waits for it; the child waits for a signal that never comes. */
const runner: StepRunner = {
  async runStep(s) {
    const p = dec(s.payload);
    if (p === "parent") {
      const c = await s.children.start({ input: enc("child") });
      return StepOutcome.continueOnChild(enc("join"), c.completionKey);
    }
    if (p === "join") return StepOutcome.succeed(enc("joined"));
    return StepOutcome.continueOnSignal(enc("never"), `go-${s.runId}`, 3_600_000);
  },
};

describe("a dead-lettered parent-ended job", () => {
  it("still cancels the children at the next start", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const first = await openEnv(runner, { clock, ...quiet });
    await first.runtime.submit({ runId: "p", input: enc("parent"), options: { maxAttemptsPerStep: 1 } });
    await until(async () => (await first.runtime.status("p"))?.step === 1 && (await first.runtime.status("p-s0-0"))?.step === 1, "the family waits");
    await first.worker?.shutdown();
    // No worker: the parent is cancelled, and the job that would cancel its child dies.
    expect(await first.runtime.cancel("p")).toBe(true);
    const claimed = [];
    for (let j = await first.queue.claim("workflow-steps", 1000); j !== null; j = await first.queue.claim("workflow-steps", 1000)) claimed.push(j);
    const job = claimed.find((j) => j.headers[PARENT_ENDED] !== undefined);
    expect(job, "the parent's end enqueued its children's settlement").toBeDefined();
    for (const j of claimed) if (j !== job) first.queue.releaseClaim(j);
    clock.advance(2000);
    await first.queue.runMaintenance();
    expect((await first.queue.view().job(job!.id))?.state).toBe("dead");
    await first.queue.close();

    const second = await openEnv(runner, { clock, store: first.store, ...quiet });
    try {
      const ended = async () => (await second.runtime.status("p-s0-0"))?.state === "terminated";
      await until(ended, "the child ends", 3000).catch(() => undefined);
      expect(await second.runtime.status("p-s0-0"), "the child of a cancelled parent is cancelled").toMatchObject({ state: "terminated", status: "cancelled" });
      await until(async () => (await second.queue.kvScan("workflow/children/")).entries.length === 0, "the child bookkeeping is dropped");
    } finally {
      await second.stop();
    }
  });
});
