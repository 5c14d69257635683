/**
 * @module Checks the queue shares with the layers above: the oldest pending
 * job (the age gauge and the operator's queue health read it through one
 * function) and the refusal of enqueues by the operations that commit
 * caller KV effects only.
 */
import { describe, expect, it } from "vitest";
import { QueueReader, SettlementEffects, ValidationError } from "taquba";
import { EngineReader } from "../../runtime/engine/engine-reader.js";
import { oldestPending } from "../../runtime/queue/oldest-pending.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { enc, openQueue, quiesce } from "./helpers.js";

describe("the oldest pending job", () => {
  it("is the oldest first job of any priority lane, for the writer and a reader; approximate past the lanes looked at", async () => {
    const { queue, clock, store } = await openQueue();
    const t0 = clock.now();
    // Oldest in the lane listed last, behind newer jobs of the lanes listed first.
    await queue.enqueue("work", enc("old"), { priority: 9 });
    clock.advance(1_000);
    await queue.enqueue("work", enc("newer"), { priority: 5 });
    clock.advance(1_000);
    await queue.enqueue("work", enc("newest"), { priority: 0 });
    await quiesce(queue);
    const reader = await QueueReader.open(store, "q");
    try {
      expect(await reader.oldestPending("work")).toEqual({ at: t0, approximate: false });
      expect(await reader.oldestPending("idle")).toEqual({ approximate: false });
      // Looking at two lanes of three finds the newer two only, and says so.
      const engine = await EngineReader.open(new PrefixedStore(new PrefixedStore(store, "q/"), "db/"));
      expect(await oldestPending(engine, "work", 2)).toEqual({ at: t0 + 1_000, approximate: true });
      expect(await oldestPending(engine, "work", 3)).toEqual({ at: t0, approximate: true });
      expect(await oldestPending(engine, "work", 4)).toEqual({ at: t0, approximate: false });
      await engine.close();
    } finally {
      await reader.close();
    }
    await queue.close();
  });
});

describe("operations that commit caller KV effects only", () => {
  it("refuse effects with an enqueue, naming the operation, and write nothing", async () => {
    const { queue } = await openQueue();
    const withEnqueue = () => new SettlementEffects().kvPut("k", enc("v")).enqueue("other", enc("x"));
    const { jobId } = await queue.enqueue("work", enc("x"), { runAt: Date.now() + 3_600_000 });
    await expect(queue.wakeScheduled("work", jobId, undefined, withEnqueue())).rejects.toThrow(/a wake commits caller KV effects only/);
    await expect(queue.requeueDead(jobId, withEnqueue())).rejects.toThrow(/a requeue of a dead job commits caller KV effects only/);
    const err = await queue.kvCompareAndApply([], withEnqueue()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain("kvCompareAndApply commits caller KV effects only");
    expect(await queue.kvGet("k")).toBeNull();
    expect((await queue.view().stats("other")).pending).toBe(0);
    expect((await queue.view().job(jobId))?.state).toBe("scheduled");
    await queue.close();
  });
});
