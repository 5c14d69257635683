/**
 * @module The seq high-water mark: which new seqs store a mark, and the
 * order of ids and FIFO claims across a restart without a close (a crash)
 * after enqueues spread over many marks, also with the clock gone back,
 * and after enqueues that stored no mark of their own because the mark
 * their commits relied on was applied but not yet durable.
 */
import { decodeTime } from "ulid";
import { describe, expect, it } from "vitest";
import { MemoryStore, type MockClock, type ObjectStore, Queue } from "taquba";
import { decodeWal } from "../../runtime/engine/wal-format.js";
import { AHEAD_MS, SeqHighWater } from "../../runtime/queue/seq-high-water.js";
import { GatedStore } from "../support/gated-store.js";
import { dec, enc, openQueue, settle } from "./helpers.js";

const ulidAt = (ms: number, tail = "0000000000000001") => {
  const chars = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  let t = "";
  for (let i = 0, x = ms; i < 10; i++, x = Math.floor(x / 32)) t = chars[x % 32] + t;
  return t + tail;
};

/** No close: a second process opens `store` at the same instant, enqueues after the last id, and claims `sent` then its own job, in order. */
async function secondProcessEnqueuesAfter(store: ObjectStore, clock: MockClock, lastId: string, sent: readonly string[]): Promise<void> {
  const again = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
  const { jobId } = await again.enqueue("q", enc("b0"));
  expect(jobId > lastId).toBe(true);
  const got: string[] = [];
  for (let j = await again.claim("q"); j; j = await again.claim("q")) {
    got.push(dec(j.payload));
    await again.ack(j);
  }
  expect(got).toEqual([...sent, "b0"]);
  await again.close();
}

describe("SeqHighWater", () => {
  it("stores a mark ahead of a new seq until an applied one covers it", () => {
    const marks = new SeqHighWater("");
    const t = 1_700_000_000_000;
    const first = marks.markFor(ulidAt(t))!;
    expect(first > ulidAt(t, "ZZZZZZZZZZZZZZZZ")).toBe(true);
    expect(decodeTime(first)).toBe(t + AHEAD_MS);
    // Not applied yet (its commit was not made, or the engine refused it): the next seq stores one too.
    expect(marks.markFor(ulidAt(t + 1))).toBeDefined();
    marks.applied(first);
    expect(marks.markFor(ulidAt(t + 1))).toBeUndefined();
    expect(marks.markFor(ulidAt(t + AHEAD_MS - 1, "ZZZZZZZZZZZZZZZZ"))).toBeUndefined();
    expect(decodeTime(marks.markFor(ulidAt(t + AHEAD_MS))!)).toBe(t + 2 * AHEAD_MS);
    // A mark applied later but lower never lowers what is covered.
    marks.applied(ulidAt(t));
    expect(marks.markFor(ulidAt(t + 1))).toBeUndefined();
  });

  it("covers what the queue opened with", () => {
    const t = 1_700_000_000_000;
    const marks = new SeqHighWater(ulidAt(t + 50));
    expect(marks.markFor(ulidAt(t + 49))).toBeUndefined();
    expect(marks.markFor(ulidAt(t + 51))).toBeDefined();
  });
});

describe("ids and FIFO across a crash", () => {
  it("orders jobs enqueued after a reopen without a close after all earlier ones, over many marks and with the clock gone back", async () => {
    for (const back of [0, 1, 5000]) {
      const store = new MemoryStore();
      const { queue, clock } = await openQueue({ store });
      const ids: string[] = [];
      const sent: string[] = [];
      // Over three marks' spans, some enqueues sharing a millisecond.
      for (let i = 0; i < 60; i++) {
        if (i % 2 === 0) clock.advance(AHEAD_MS / 8);
        sent.push(`a${i}`);
        ids.push((await queue.enqueue("q", enc(`a${i}`))).jobId);
      }
      // No close: a second process opens the store (fencing the first) at the same instant, or earlier.
      clock.set(clock.now() - back);
      const again = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
      for (let i = 0; i < 3; i++) {
        sent.push(`b${i}`);
        const { jobId } = await again.enqueue("q", enc(`b${i}`));
        expect(jobId > ids[ids.length - 1]!).toBe(true);
        ids.push(jobId);
      }
      const got: string[] = [];
      for (let j = await again.claim("q"); j; j = await again.claim("q")) {
        got.push(dec(j.payload));
        await again.ack(j);
      }
      expect(got).toEqual(sent);
      await again.close();
      await queue.close().catch(() => undefined);
    }
  });

  it("stores one mark for enqueues applied while the commit of the mark waits for its WAL put, and a crash after keeps their order", async () => {
    const store = new GatedStore(new MemoryStore());
    const { queue, clock } = await openQueue({ store });
    store.hold = (key) => key.includes("wal/");
    const sent = ["a0", "a1", "a2", "a3"];
    // The first enqueue's commit stores the mark; its WAL put is held, so the mark is applied and not durable.
    const first = queue.enqueue("q", enc(sent[0]!));
    await store.waitHeld(1);
    const more: Promise<{ jobId: string }>[] = [];
    for (const payload of sent.slice(1)) {
      clock.advance(1);
      more.push(queue.enqueue("q", enc(payload)));
      await settle(1);
    }
    store.hold = () => false;
    while (store.held.length > 0) store.release(store.held[0]!.key);
    const ids = [(await first).jobId, ...(await Promise.all(more)).map((o) => o.jobId)];
    // Only the first commit wrote the mark: the later ones rely on it.
    expect(await markPuts(store)).toBe(1);
    await secondProcessEnqueuesAfter(store, clock, ids[ids.length - 1]!, sent);
    await queue.close().catch(() => undefined);
  });
});

describe("marks in one commit", () => {
  it("an enqueued batch stores one mark for all its jobs, and a crash after keeps their order", async () => {
    const store = new GatedStore(new MemoryStore());
    const { queue, clock } = await openQueue({ store });
    const sent = Array.from({ length: 50 }, (_, i) => `a${i}`);
    const out = await queue.enqueueBatch(sent.map((p) => ({ queueName: "q", payload: enc(p) })));
    expect(await markPuts(store)).toBe(1);
    await secondProcessEnqueuesAfter(store, clock, out[out.length - 1]!.jobId, sent);
    await queue.close().catch(() => undefined);
  });
});

/** The puts of the seq high-water mark in the WAL objects `store` holds. */
async function markPuts(store: GatedStore): Promise<number> {
  let puts = 0;
  for await (const { key } of store.inner.list("")) {
    const at = key.lastIndexOf("wal/");
    if (at < 0) continue;
    const obj = await store.inner.get(key);
    const wal = decodeWal(key, obj!.body, Number(key.slice(at + "wal/".length)));
    if (wal.kind !== "batches") continue;
    for (const batch of wal.batches) for (const op of batch) if (op.kind === "put" && op.key === "m/seq") puts++;
  }
  return puts;
}
