/**
 * @module The seq high-water mark counted once applied
 * (seq-high-water.ts), when the WAL put of the commit that stored it fails
 * for good while later commits that relied on it are applied, and one of
 * theirs lands in the store: none of those enqueues is acknowledged, every
 * enqueue after is refused with the cause, and a second process that opens
 * the store with its clock gone back holds none of them and hands out ids
 * after every acknowledged one, claimed in order.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MemoryStore, MockClock, Queue, StoreUnavailableError } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { dec, enc, settle } from "./helpers.js";

describe("the WAL put of a commit that stored the seq mark fails for good", () => {
  it("refuses the enqueues that relied on it, and every later one, and a reopen orders new ids after the acknowledged ones", async () => {
    const inner = new MemoryStore();
    let failing: string | undefined;
    let walPuts = 0;
    const store = failWhen(inner, (call, key) => {
      if (call !== "put" || !key.includes("wal/")) return undefined;
      walPuts++;
      // The first WAL object put once failing starts fails every attempt: the one holding the mark's commit.
      if (failing === "next") failing = key;
      return key === failing ? new StoreUnavailableError("put", key, new Error("injected: the disk is gone")) : undefined;
    });
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "q", {
      clock,
      flushIntervalMs: 0,
      logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
      engineOptions: { retry: { attempts: 3, baseDelayMs: 5, maxDelayMs: 5 } },
    });
    const acked = [(await queue.enqueue("q", enc("a0"))).jobId, (await queue.enqueue("q", enc("a1"))).jobId];
    // Past what the stored mark covers: the next enqueue stores a mark, whose WAL put fails for good.
    clock.advance(5000);
    failing = "next";
    const marked = queue.enqueue("q", enc("b0"));
    await settle(1);
    // Applied after the mark's commit, in later WAL objects that do land, and relying on the mark.
    const relied = [queue.enqueue("q", enc("b1"))];
    await settle(1);
    relied.push(queue.enqueue("q", enc("b2")));
    const outcomes = await Promise.allSettled([marked, ...relied]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(walPuts).toBeGreaterThan(4);
    // A later commit's WAL object landed past the one that failed: the gap recovery stops at.
    const walKeys: string[] = [];
    for await (const { key } of inner.list("")) if (key.includes("wal/")) walKeys.push(key);
    expect(walKeys.some((k) => k > failing!)).toBe(true);
    expect(walKeys).not.toContain(failing);
    const later = await queue.enqueue("q", enc("c0")).catch((e: unknown) => e);
    expect(later).toBeInstanceOf(ClosedError);
    await queue.close().catch(() => undefined);

    const again = await Queue.open(inner, "q", { clock: new MockClock(clock.now() - 10_000), flushIntervalMs: 0 });
    const { jobId: fresh } = await again.enqueue("q", enc("fresh"));
    for (const id of acked) expect(fresh > id).toBe(true);
    const got: string[] = [];
    for (let j = await again.claim("q"); j !== null; j = await again.claim("q")) {
      got.push(dec(j.payload));
      await again.ack(j);
    }
    expect(got).toEqual(["a0", "a1", "fresh"]);
    await again.close();
  });
});
