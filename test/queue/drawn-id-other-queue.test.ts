/**
 * @module A job named with an id another queue drew, staged as drawn: a
 * `WorkflowQueue` may draw its next steps' ids from one queue and commit
 * them on another. The committing queue's marks say nothing of ids it did
 * not hand out, so it looks such an id up: a caller's job holding it
 * refuses the commit with `DuplicateJobIdError` instead of being
 * overwritten.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MockClock, SettlementEffects } from "taquba";
import { stageRebuiltEnqueue } from "../../runtime/queue/effects.js";
import { dec, enc, openQueue } from "./helpers.js";

const T0 = 1_700_000_000_000;

/** A settlement's effects enqueuing job `jobId` to queue "q" as a drawn id, as a workflow's next step does. */
function nextJobEffects(jobId: string): SettlementEffects {
  const effects = new SettlementEffects();
  stageRebuiltEnqueue(effects, "q", enc("next"), {
    jobId,
    jobIdDrawn: true,
    dedupKey: `next-${jobId}`,
    priority: 1000,
    maxAttempts: 3,
    headers: { step: "1" },
  });
  return effects;
}

describe("a job named with an id another queue drew", () => {
  it("is looked up on the queue that commits it: a caller's job holding the id refuses the commit and stays as it was", async () => {
    // The committing queue's draws come before and after the other queue's, in time: the id lies among its own draws.
    const committing = await openQueue({ clock: new MockClock(T0) });
    const drawing = await openQueue({ clock: new MockClock(T0 + 1) });
    try {
      await committing.queue.enqueue("work", enc("step"));
      const job = (await committing.queue.claim("work"))!;
      committing.queue.nextJobId();
      const drawn = drawing.queue.nextJobId();
      // A caller's job takes the id on the committing queue, which then draws past it.
      await committing.queue.enqueue("q", enc("the caller's"), { jobId: drawn });
      committing.clock.advance(2);
      expect(committing.queue.nextJobId() > drawn).toBe(true);

      const refused = await committing.queue.ack(job, nextJobEffects(drawn)).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DuplicateJobIdError);
      expect((refused as DuplicateJobIdError).jobId).toBe(drawn);
      expect(await committing.queue.view().job(job.id)).toMatchObject({ state: "claimed" });
      const claimed = await committing.queue.claim("q");
      expect(claimed === null ? undefined : [claimed.id, dec(claimed.payload)]).toEqual([drawn, "the caller's"]);
    } finally {
      await committing.queue.close();
      await drawing.queue.close();
    }
  });

  it("held by no job is inserted under that id", async () => {
    const committing = await openQueue({ clock: new MockClock(T0) });
    const drawing = await openQueue({ clock: new MockClock(T0 + 1) });
    try {
      await committing.queue.enqueue("work", enc("step"));
      const job = (await committing.queue.claim("work"))!;
      committing.queue.nextJobId();
      const drawn = drawing.queue.nextJobId();
      committing.clock.advance(2);
      committing.queue.nextJobId();
      expect(await committing.queue.ack(job, nextJobEffects(drawn))).toEqual([{ jobId: drawn, newlyEnqueued: true }]);
      expect(await committing.queue.view().job(drawn)).toMatchObject({ id: drawn, state: "pending", headers: { step: "1" } });
    } finally {
      await committing.queue.close();
      await drawing.queue.close();
    }
  });
});
