/**
 * @module `Queue.close()` against what is in flight when it is called:
 * called again while a close runs (a signal handler and a `finally` both
 * closing, say), it resolves only once the queue is closed, so a caller
 * that reopens the store or removes its directory after its own `await
 * close()` does not find the first close still flushing and closing the
 * engine; and a claim waiting for its job's enqueue to become durable when
 * the close begins hands nothing out (no one could settle it) and gives
 * the job back, so the next open does not count an attempt no worker made;
 * likewise the job an ack claims for its caller (`ackClaimingNext`) when
 * the ack's commit is still on its way as the close begins.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, LocalStore, MemoryStore, Queue, SettlementEffects } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc, settle } from "./helpers.js";

const tempDir = useTempDirs("taquba-close-twice-");

describe("Queue.close() called twice", () => {
  it("the second call resolves only after the queue closed, as the first", async () => {
    const dir = await tempDir();
    const announced: string[] = [];
    const queue = await Queue.open(new LocalStore(dir), "app", { onClosed: () => announced.push("closed") });
    await queue.enqueue("q", new Uint8Array([1]));
    const first = queue.close();
    const second = queue.close();
    await second;
    expect(announced).toEqual(["closed"]);
    await first;
    // A third call, after: resolves at once, with nothing announced again.
    await queue.close();
    expect(announced).toEqual(["closed"]);
    const reopened = await Queue.open(new LocalStore(dir), "app");
    expect((await reopened.claim("q", 1000))?.payload).toEqual(new Uint8Array([1]));
    await reopened.close();
  });

  it("a claim waiting for its job's durability when close() begins gives the job back: reopened, it is pending on its first attempt", async () => {
    let holding = false;
    const inner = new MemoryStore();
    const store = new GatedStore(inner, (key) => holding && key.includes("/wal/"));
    const queue = await Queue.open(store, "app", { flushIntervalMs: 0 });
    holding = true;
    const enqueue = queue.enqueue("q", enc("a"));
    await store.waitHeld(1);
    const claim = queue.claim("q", 60_000).then(
      (job) => job,
      (err: unknown) => err,
    );
    await settle(20);
    const closing = queue.close();
    // Closed from the call on, while it waits for the claim (a worker's loop stops on it).
    expect(queue.closed).toBe(true);
    await settle(20);
    // No claim starts while the close waits.
    await expect(queue.claim("q", 60_000)).rejects.toBeInstanceOf(ClosedError);
    holding = false;
    for (const h of [...store.held]) store.release(h.key);
    await enqueue;
    expect(await claim).toBeInstanceOf(ClosedError);
    await closing;
    const reopened = await Queue.open(inner, "app");
    expect(reopened.recovery.requeued).toEqual([]);
    expect(await reopened.view().stats("q")).toMatchObject({ pending: 1, claimed: 0 });
    expect((await reopened.claim("q", 60_000))?.attempt).toBe(1);
    await reopened.close();
  });

  it("an ack claiming the next job whose commit is still on its way when close() begins hands nothing out and gives the job back", async () => {
    let holding = false;
    const inner = new MemoryStore();
    const store = new GatedStore(inner, (key) => holding && key.includes("/wal/"));
    const queue = await Queue.open(store, "app", { flushIntervalMs: 0 });
    await queue.enqueue("q", enc("first"));
    const job = (await queue.claim("q", 60_000))!;
    holding = true;
    const acked = queue.ackClaimingNext(job, new SettlementEffects().enqueue("q", enc("second")), { index: 0, reserve: () => true }).then(
      (res) => res,
      (err: unknown) => err,
    );
    await store.waitHeld(1);
    const closing = queue.close();
    await settle(20);
    holding = false;
    for (const h of [...store.held]) store.release(h.key);
    const res = await acked;
    // The ack itself is durable; the job it claimed is not handed to anyone.
    expect(res).toMatchObject({ enqueued: [{ newlyEnqueued: true }] });
    expect((res as { next?: unknown }).next).toBeUndefined();
    await closing;
    const reopened = await Queue.open(inner, "app");
    expect(reopened.recovery.requeued).toEqual([]);
    expect(await reopened.view().stats("q")).toMatchObject({ pending: 1, claimed: 0 });
    const next = (await reopened.claim("q", 60_000))!;
    expect({ payload: dec(next.payload), attempt: next.attempt }).toEqual({ payload: "second", attempt: 1 });
    await reopened.close();
  });

  it("two acks claiming next jobs in one WAL group, on their way when close() begins: neither hands its job out, both give them back", async () => {
    let holding = false;
    const inner = new MemoryStore();
    const store = new GatedStore(inner, (key) => holding && key.includes("/wal/"));
    const queue = await Queue.open(store, "app", { flushIntervalMs: 0 });
    await queue.enqueue("q", enc("a"));
    await queue.enqueue("q", enc("b"));
    const [a, b] = await queue.claimBatch("q", 2, 60_000);
    holding = true;
    // Both in one turn: their commits go to the WAL in one group, whose promise they share.
    const acks = [a!, b!].map((job, i) =>
      queue.ackClaimingNext(job, new SettlementEffects().enqueue("q", enc(`next-${i}`)), { index: 0, reserve: () => true }).then(
        (res) => res,
        (err: unknown) => err,
      ),
    );
    await store.waitHeld(1);
    const closing = queue.close();
    await settle(20);
    holding = false;
    for (const h of [...store.held]) store.release(h.key);
    for (const res of await Promise.all(acks)) {
      expect(res).toMatchObject({ enqueued: [{ newlyEnqueued: true }] });
      expect((res as { next?: unknown }).next).toBeUndefined();
    }
    await closing;
    const reopened = await Queue.open(inner, "app");
    expect(reopened.recovery.requeued).toEqual([]);
    expect(await reopened.view().stats("q")).toMatchObject({ pending: 2, claimed: 0 });
    const next = await reopened.claimBatch("q", 2, 60_000);
    expect(next.map((j) => ({ payload: dec(j.payload), attempt: j.attempt })).sort((x, y) => x.payload.localeCompare(y.payload))).toEqual([
      { payload: "next-0", attempt: 1 },
      { payload: "next-1", attempt: 1 },
    ]);
    await reopened.close();
  });
});
