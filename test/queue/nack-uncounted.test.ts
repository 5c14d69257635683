/**
 * @module `nack(..., { countAttempt: false })`: the attempt is given back, so
 * a job put back because a store it depends on was unreachable is never
 * dead-lettered by it, even on its last attempt; effects do not apply.
 */
import { describe, expect, it } from "vitest";
import { SettlementEffects, type ClaimedJob } from "taquba";
import { until } from "../support/until.js";
import { enc, openQueue } from "./helpers.js";

describe("an uncounted nack", () => {
  it("returns a job on its last attempt to pending with the attempt given back", async () => {
    const { queue } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"), { maxAttempts: 1 });
    const first = (await queue.claim("q"))!;
    expect(first.isLastAttempt()).toBe(true);
    const out = await queue.nack(first, "store unreachable", new SettlementEffects().kvPut("applied", enc("1")), { countAttempt: false });
    expect(out.kind).toBe("retried");
    expect(await queue.kvGet("applied")).toBeNull();
    const again = (await queue.claim("q"))!;
    expect(again.id).toBe(jobId);
    expect(again.attempt).toBe(1);
    // A counted nack on the same (last) attempt dead-letters as before.
    expect((await queue.nack(again, "the work failed")).kind).toBe("dead");
    await queue.close();
  });

  it("waits retryAfterMs on the queue's clock", async () => {
    const { queue, clock } = await openQueue();
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    const out = await queue.nack(job, "store unreachable", undefined, { countAttempt: false, retryAfterMs: 500 });
    expect(out).toEqual({ kind: "retried", runAt: clock.now() + 500 });
    expect(await queue.claim("q")).toBeNull();
    clock.advance(500);
    let again: ClaimedJob | null = null;
    await until("the job due again", async () => (again = await queue.claim("q")) !== null, 5_000);
    expect(again!.attempt).toBe(1);
    await queue.close();
  });
});
