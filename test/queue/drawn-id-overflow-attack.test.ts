/**
 * @module More ids drawn by `nextJobId` and not yet inserted than the queue
 * keeps notes of (8,192): the oldest notes are dropped, and an id whose
 * note was dropped is looked up at its insert, so a caller's job that took
 * it is refused with `DuplicateJobIdError` and kept, never overwritten;
 * ids still noted are inserted without a look-up.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DuplicateJobIdError, Engine, type Queue, SettlementEffects } from "taquba";
import { stageRebuiltEnqueue } from "../../runtime/queue/effects.js";
import { dec, enc, openQueue } from "./helpers.js";

/** How many drawn ids a queue keeps notes of (`HANDED_OUT_LIMIT`). */
const NOTED = 8192;
const OVER = 40;

const realHas = Engine.prototype.has;

/** Counts the engine's `has` calls of job record keys (`j/`) until `afterEach`. */
function countJobLookups(): { count: number } {
  const counted = { count: 0 };
  Engine.prototype.has = function (this: Engine, key: string) {
    if (key.startsWith("j/")) counted.count++;
    return realHas.call(this, key);
  };
  return counted;
}

afterEach(() => {
  Engine.prototype.has = realHas;
});

/** A settlement inserting each of `ids` into queue "q" as ids the queue drew, as a workflow's next steps are. */
function drawnInserts(ids: readonly string[]): SettlementEffects {
  const effects = new SettlementEffects();
  for (const id of ids)
    stageRebuiltEnqueue(effects, "q", enc(`drawn ${id}`), {
      jobId: id,
      dedupKey: `drawn-${id}`,
      priority: 1000,
      maxAttempts: 3,
      headers: {},
      jobIdDrawn: true,
    });
  return effects;
}

async function claimedWork(queue: Queue) {
  await queue.enqueue("work", enc("step"));
  return (await queue.claim("work"))!;
}

describe("more drawn ids outstanding than the queue keeps notes of", () => {
  it("the ids whose notes were dropped are looked up at their insert, the others not, and every one is inserted", async () => {
    const { queue } = await openQueue();
    const job = await claimedWork(queue);
    const drawn = Array.from({ length: NOTED + OVER }, () => queue.nextJobId());
    expect(new Set(drawn).size).toBe(drawn.length);
    const lookups = countJobLookups();
    const out = await queue.ack(job, drawnInserts(drawn));
    expect(out.every((o) => o.newlyEnqueued)).toBe(true);
    expect(lookups.count).toBe(OVER);
    expect((await queue.view().stats("q")).pending).toBe(drawn.length);
    await queue.close();
  });

  it("a caller's id equal to a dropped draw or a noted one is refused at the drawn insert, and the caller's job is kept", async () => {
    const { queue } = await openQueue();
    const job = await claimedWork(queue);
    const drawn = Array.from({ length: NOTED + OVER }, () => queue.nextJobId());
    const dropped = drawn[3]!;
    const noted = drawn[NOTED]!;
    await queue.enqueue("q", enc("the caller's"), { jobId: dropped });
    await queue.enqueue("q", enc("the caller's"), { jobId: noted });
    for (const id of [dropped, noted]) {
      await expect(queue.ack(job, drawnInserts([id]))).rejects.toBeInstanceOf(DuplicateJobIdError);
      expect(await queue.view().job(id)).toMatchObject({ id, queueName: "q", state: "pending", attempt: 0 });
    }
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    // The rest, dropped or noted, are inserted under their ids.
    const rest = drawn.filter((id) => id !== dropped && id !== noted);
    const out = await queue.ack(job, drawnInserts(rest));
    expect(out.map((o) => o.jobId)).toEqual(rest);
    expect(out.every((o) => o.newlyEnqueued)).toBe(true);
    const payloads = new Map<string, string>();
    for (let claimed = await queue.claim("q"); claimed !== null; claimed = await queue.claim("q")) payloads.set(claimed.id, dec(claimed.payload));
    expect(payloads.size).toBe(drawn.length);
    expect(payloads.get(dropped)).toBe("the caller's");
    expect(payloads.get(noted)).toBe("the caller's");
    for (const id of rest) expect(payloads.get(id)).toBe(`drawn ${id}`);
    await queue.close();
  });
});
