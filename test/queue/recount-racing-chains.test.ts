/**
 * @module `Queue.recountStats` racing workers whose acks claim the next job
 * in the same commit (`ackClaimingNext`: the acked job's done count rides
 * in the next job's claimed entry) or leave it pending for a plain claim,
 * with and without done retention (a retained done job's entry is counted
 * beside the done count a claimed entry carries for it): recounts with and
 * without a plan between the workers' turns never move a count away from
 * the jobs, a confirmed plan is refused whenever a job moved since its dry
 * run, and a recount after the close is refused.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, SettlementEffects, StatsPlanChangedError, type ClaimedJob, type Queue } from "taquba";
import { testRandom } from "../support/seed.js";
import { enc, openQueue } from "./helpers.js";

const CHAINS = 8;
const STEPS = 12;

/** Acks whose commit claimed the next job (its done count carried in that job's claimed entry). */
let chained = 0;

async function chain(queue: Queue, first: ClaimedJob): Promise<void> {
  let job = first;
  for (let s = 1; s < STEPS; s++) {
    const effects = new SettlementEffects().enqueue("q", enc(`step ${s}`));
    const { next } = await queue.ackClaimingNext(job, effects, { index: 0, reserve: () => true });
    if (next === undefined) {
      // Left pending: claimed like any job.
      const claimed = await queue.claim("q");
      if (claimed === null) throw new Error("a chained job was lost");
      job = claimed;
    } else {
      chained++;
      job = next;
    }
  }
  await queue.ack(job);
}

describe("recounts racing chained acks", () => {
  it.each([
    ["no done retention", undefined],
    ["done jobs retained (their entries counted beside the done counts the claimed entries carry)", 3_600_000],
  ])("keep the stats on the jobs, and refuse a plan a move made stale: %s", async (_what, doneRetentionMs) => {
    const r = testRandom("recount racing chains");
    const { queue } = await openQueue(doneRetentionMs === undefined ? {} : { queueConfigs: { q: { doneRetentionMs } } });
    for (let i = 0; i < CHAINS; i++) await queue.enqueue("q", enc(`chain ${i}`));
    let running = true;
    let refused = 0;
    let confirmed = 0;
    const recounts = (async () => {
      while (running) {
        // Both read in this turn: the recount of the indexes, and the record plus what the claimed entries carry.
        const [dry, stats] = await Promise.all([queue.recountStats("q", { dryRun: true }), queue.view().stats("q")]);
        expect(dry.changed).toBe(false);
        expect({ ...dry.recounted, done: dry.recounted.done + dry.carriedDone }).toEqual(stats);
        if (r.int(2) === 0) await new Promise((res) => setImmediate(res));
        const out = await queue.recountStats("q", { plan: dry.plan }).then(
          () => "confirmed",
          (e: unknown) => e,
        );
        if (out === "confirmed") confirmed++;
        else {
          expect(out).toBeInstanceOf(StatsPlanChangedError);
          refused++;
        }
        await queue.recountStats("q");
      }
    })();
    const claims: ClaimedJob[] = [];
    for (let i = 0; i < CHAINS; i++) claims.push((await queue.claim("q"))!);
    await Promise.all(claims.map((c) => chain(queue, c)));
    running = false;
    await recounts;
    expect(chained).toBeGreaterThan(CHAINS);
    expect(refused).toBeGreaterThan(0);
    expect(confirmed).toBeGreaterThan(0);
    expect(await queue.view().stats("q")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: CHAINS * STEPS, dead: 0 });
    expect(await queue.recountStats("q", { dryRun: true })).toMatchObject({ changed: false, carriedDone: 0 });
    await queue.close();
    await expect(queue.recountStats("q")).rejects.toBeInstanceOf(ClosedError);
  });
});
