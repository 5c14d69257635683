/**
 * @module A settlement naming a caller id in its effects, whose job's record
 * a checkpoint paged out, and whose load of that record fails: the caller
 * id was counted in flight when the effects were prepared, and the
 * settlement's retry loop (warm the record, build the commit) gave it up
 * only when it built its commit. The load's failure left it counted for
 * good: every later draw passed over an id no enqueue would ever commit,
 * and a large payload of the same effects stayed held as in flight, never
 * deleted.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, SettlementEffects, withFaults } from "taquba";
import { ulidAfter } from "../support/next-ulid.js";
import { enc, settle } from "./helpers.js";

async function pagedQueue() {
  const clock = new MockClock(1_700_000_000_000);
  const inner = new MemoryStore();
  const store = withFaults(inner, { failureRate: 0, seed: 1, ops: ["get"] });
  const queue = await Queue.open(store, "q", {
    clock,
    flushIntervalMs: 0,
    recordCacheBytes: 0,
    payloadOffloadBytes: 16,
    engineOptions: { checkpointWalObjects: 2, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } },
  });
  return { queue, store, inner };
}

/** The payload objects the store holds. */
async function payloadKeys(store: MemoryStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list("")) if (o.key.includes("/payloads/")) keys.push(o.key);
  return keys;
}

describe("a settlement whose paged-out record fails to load", () => {
  for (const large of [false, true]) {
    it(`no longer holds off the caller id its effects name${large ? ", and deletes their payload object" : ""}`, async () => {
      const { queue, store, inner } = await pagedQueue();
      // Records of at least 64 bytes are paged.
      await queue.enqueue("work", enc("job".padEnd(64, ".")));
      const job = (await queue.claim("work"))!;
      // Later commits checkpoint the claimed record out of memory: the settlement must load it first.
      const checkpoints = queue.engineStats.checkpoints;
      for (let i = 0; i < 6; i++) await queue.enqueue("other", enc(`filler ${i}`));
      await queue.flush();
      for (let i = 0; i < 50 && queue.engineStats.checkpoints < checkpoints + 2; i++) await settle(2);
      expect(queue.engineStats.checkpoints).toBeGreaterThanOrEqual(checkpoints + 2);
      const base = queue.nextJobId();
      // Two draws on: the next one after `base`, and one the payload object of a large effect takes.
      const named = ulidAfter(base, 3);
      store.failureRate = 1;
      const payload = large ? enc("a payload past the offload size".padEnd(64, ".")) : enc("B");
      const effects = new SettlementEffects().enqueue("q", payload, { jobId: named });
      const failed = await queue.ack(job, effects).then(
        () => undefined,
        (e: unknown) => e,
      );
      store.failureRate = 0;
      expect(String(failed), "the ack failed with the store's error").toMatch(/injected|fault|unavailable/i);
      // Drawn ids pass over no id of the failed settlement: they reach the named id.
      const draws = [queue.nextJobId(), queue.nextJobId(), queue.nextJobId()];
      expect(draws).toContain(named);
      // The ack again: it commits, its named job enqueued under its name.
      const [enqueued] = await queue.ack(job, new SettlementEffects().enqueue("q", enc("C"), { jobId: ulidAfter(named, 5) }));
      expect(enqueued!.jobId).toBe(ulidAfter(named, 5));
      if (large) {
        // The failed settlement's payload object goes: none is left but what a job refers to (none here: "C" is small).
        await queue.flush();
        await expect.poll(() => payloadKeys(inner)).toEqual([]);
      }
      await queue.close();
    });
  }
});
