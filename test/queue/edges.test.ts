/**
 * @module Queue edge cases: concurrent claims, an earlier schedule re-arming the
 * scheduler, bad input, two queue stores in one object store, closed queues.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MemoryStore, Queue, SettlementEffects, ValidationError } from "taquba";
import { dec, enc, openQueue, settle } from "./helpers.js";

describe("edges", () => {
  it("concurrent claims never hand out one job twice", async () => {
    const { queue } = await openQueue();
    for (let i = 0; i < 5; i++) await queue.enqueue("q", enc(String(i)));
    const got = await Promise.all(Array.from({ length: 10 }, () => queue.claim("q")));
    const ids = got.filter((j) => j !== null).map((j) => j!.id);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    await queue.close();
  });

  it("the scheduler re-arms for an earlier schedule", async () => {
    const { queue, clock } = await openQueue();
    await queue.enqueue("q", enc("late"), { runAt: clock.now() + 10_000 });
    await settle();
    expect(clock.nextDeadline).toBe(clock.now() + 10_000);
    await queue.enqueue("q", enc("early"), { runAt: clock.now() + 1000 });
    await settle();
    expect(clock.nextDeadline).toBe(clock.now() + 1000);
    clock.advance(1000);
    await settle();
    expect(dec((await queue.claim("q"))!.payload)).toBe("early");
    expect(await queue.claim("q")).toBeNull();
    await queue.close();
  });

  it("rejects bad input with ValidationError and changes nothing", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("x"));
    const bad: (() => Promise<unknown>)[] = [
      () => queue.cancel("bad id!"),
      () => queue.cancelJob(""),
      () => queue.wakeScheduled("bad/q", "id"),
      () => queue.wake("x", "str" as unknown as Uint8Array),
      () => queue.claim("q", 0),
      () => queue.claimBatch("q", 0),
      () => queue.claim("bad/q"),
      () => queue.kvScan("p", { limit: 0 }),
      () => queue.view().job("no/slash"),
      () => queue.view().stats(""),
      () => queue.enqueueWithEffects("q", enc("y"), { dedupKey: "" }, new SettlementEffects().kvPut("a", enc("1"))),
      () => Queue.open(new MemoryStore(), "a//b"),
      () => Queue.open(new MemoryStore(), "ok", { queueConfigs: { "bad/name": {} } }),
      () => Queue.open(new MemoryStore(), "ok", { payloadOffloadBytes: 0 }),
    ];
    for (const f of bad) await expect(f()).rejects.toBeInstanceOf(ValidationError);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1, claimed: 0 });
    expect(await queue.kvGet("a")).toBeNull();
    await queue.close();
  });

  it("two queue stores share one object store without touching each other", async () => {
    const store = new MemoryStore();
    const a = await Queue.open(store, "tenant/a", { flushIntervalMs: 0 });
    const b = await Queue.open(store, "tenant/b", { flushIntervalMs: 0 });
    await a.enqueue("q", enc("for a"));
    await b.kvPut("k", enc("b"));
    expect(await b.view().stats("q")).toMatchObject({ pending: 0 });
    expect(await a.kvGet("k")).toBeNull();
    expect(dec((await a.claim("q"))!.payload)).toBe("for a");
    const keys: string[] = [];
    for await (const o of store.list("")) keys.push(o.key);
    expect(keys.every((k) => k.startsWith("tenant/a/db/") || k.startsWith("tenant/b/db/"))).toBe(true);
    await a.close();
    await b.close();
  });

  it("a closed queue refuses work with ClosedError", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("x"));
    const job = (await queue.claim("q"))!;
    await queue.close();
    await expect(queue.enqueue("q", enc("y"))).rejects.toBeInstanceOf(ClosedError);
    await expect(queue.ack(job)).rejects.toBeInstanceOf(ClosedError);
    await expect(queue.kvPut("k", enc("v"))).rejects.toBeInstanceOf(ClosedError);
  });
});
