/**
 * @module Caller KV, ExpiryIndex, enqueueWithEffects and the read views (Queue.view
 * and QueueReader).
 */
import { describe, expect, it } from "vitest";
import { ExpiryIndex, KvValueTooLargeError, MAX_KV_VALUE_SIZE, SettlementEffects, ValidationError } from "taquba";
import { dec, enc, openQueue } from "./helpers.js";

describe("caller KV", () => {
  it("get, put, delete, compare-and-put, compare-and-delete", async () => {
    const { queue } = await openQueue();
    expect(await queue.kvGet("a")).toBeNull();
    await queue.kvPut("a", enc("1"));
    expect(dec((await queue.kvGet("a"))!)).toBe("1");
    expect(await queue.kvCompareAndPut("a", null, enc("x"))).toBe(false);
    expect(await queue.kvCompareAndPut("a", enc("2"), enc("x"))).toBe(false);
    expect(await queue.kvCompareAndPut("a", enc("1"), enc("2"))).toBe(true);
    expect(await queue.kvCompareAndPut("b", null, enc("b"))).toBe(true);
    expect(await queue.kvCompareAndDelete("a", enc("1"))).toBe(false);
    expect(await queue.kvCompareAndDelete("a", enc("2"))).toBe(true);
    expect(await queue.kvGet("a")).toBeNull();
    await queue.kvDelete("b");
    await queue.kvDelete("b");
    expect(await queue.kvGet("b")).toBeNull();
    await queue.close();
  });

  it("enforces MAX_KV_VALUE_SIZE and key rules without writing", async () => {
    const { queue } = await openQueue();
    await queue.kvPut("max", new Uint8Array(MAX_KV_VALUE_SIZE));
    await expect(queue.kvPut("big", new Uint8Array(MAX_KV_VALUE_SIZE + 1))).rejects.toBeInstanceOf(KvValueTooLargeError);
    await expect(queue.kvCompareAndPut("big", null, new Uint8Array(MAX_KV_VALUE_SIZE + 1))).rejects.toBeInstanceOf(KvValueTooLargeError);
    await expect(queue.kvPut("", enc("x"))).rejects.toBeInstanceOf(ValidationError);
    expect(await queue.kvGet("big")).toBeNull();
    await queue.close();
  });

  it("caller keys cannot reach queue internals", async () => {
    const { queue } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"));
    // Keys shaped like internal keys land in the caller namespace only.
    await queue.kvPut(`j/${jobId}`, enc("x"));
    await queue.kvDelete(`n/q`);
    expect(await queue.view().job(jobId)).toMatchObject({ state: "pending" });
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1 });
    expect((await queue.kvScan("")).entries.map((e) => e.key)).toEqual([`j/${jobId}`]);
    await queue.close();
  });

  it("scans by prefix in pages", async () => {
    const { queue } = await openQueue();
    for (const k of ["p/1", "p/2", "p/3", "p/4", "q/1"]) await queue.kvPut(k, enc(k));
    const p1 = await queue.kvScan("p/", { limit: 3 });
    expect(p1.entries.map((e) => e.key)).toEqual(["p/1", "p/2", "p/3"]);
    const p2 = await queue.kvScan("p/", { limit: 3, after: p1.nextCursor! });
    expect(p2.entries.map((e) => e.key)).toEqual(["p/4"]);
    expect(p2.nextCursor).toBeUndefined();
    expect((await queue.view().kvScan("q/")).entries.map((e) => dec(e.value))).toEqual(["q/1"]);
    await queue.close();
  });
});

describe("ExpiryIndex", () => {
  it("orders entries by expiry and scans the expired front", async () => {
    const { queue, clock } = await openQueue();
    const idx = new ExpiryIndex("app/exp/");
    const now = clock.now();
    const e = new SettlementEffects();
    idx.add(e, now + 300, "c");
    idx.add(e, now + 100, "a", enc("va"));
    idx.add(e, now + 10_000_000, "z");
    idx.add(e, now + 200, "b");
    await queue.enqueueWithEffects("q", enc("x"), {}, e);
    expect(await idx.scanExpired(queue, now + 99)).toEqual([]);
    const due = await idx.scanExpired(queue, now + 200);
    expect(due.map((d) => [d.suffix, d.expiresAt])).toEqual([
      ["a", now + 100],
      ["b", now + 200],
    ]);
    expect(dec(due[0]!.value)).toBe("va");
    expect((await idx.scanExpired(queue.view(), now + 1_000_000, 2)).map((d) => d.suffix)).toEqual(["a", "b"]);
    const rm = new SettlementEffects();
    for (const d of due) idx.remove(rm, d.expiresAt, d.suffix);
    const job = (await queue.claim("q"))!;
    await queue.ack(job, rm);
    expect((await idx.scanExpired(queue, now + 10_000_000)).map((d) => d.suffix)).toEqual(["c", "z"]);
    expect(() => new ExpiryIndex("")).toThrow(ValidationError);
    const bound = new ExpiryIndex("app/exp/", queue);
    expect((await bound.scanExpired(now + 10_000_000)).map((d) => d.suffix)).toEqual(["c", "z"]);
    await expect(idx.scanExpired(now)).rejects.toBeInstanceOf(ValidationError);
    await queue.close();
  });

  it("reads page after page past keys under its prefix that are not entries, and returns at most the limit", async () => {
    const { queue, clock } = await openQueue();
    const idx = new ExpiryIndex("app/exp/");
    const now = clock.now();
    // Other keys under the prefix: "!" sorts before the time digits, "~" after them.
    for (const k of ["!a", "!b", "!c", "~note"]) await queue.kvPut(`app/exp/${k}`, enc(k));
    for (const [i, s] of ["a", "b", "c", "d"].entries()) await queue.kvPut(idx.key(now + i, s), enc(s));
    // With a limit of 2 the first page holds only other keys and the second one
    // entry: the scan must continue after each page, asking only for what is missing.
    expect((await idx.scanExpired(queue, now + 10, 2)).map((d) => d.suffix)).toEqual(["a", "b"]);
    expect((await idx.scanExpired(queue, now + 10, 3)).map((d) => d.suffix)).toEqual(["a", "b", "c"]);
    // Unbounded: every entry, and never the key after them that is not one.
    const all = await idx.scanExpired(queue, now + 10);
    expect(all.map((d) => [d.suffix, d.expiresAt])).toEqual([
      ["a", now],
      ["b", now + 1],
      ["c", now + 2],
      ["d", now + 3],
    ]);
    expect((await idx.scanExpired(queue, now + 1)).map((d) => d.suffix)).toEqual(["a", "b"]);
    await queue.close();
  });

  it("parses only its own keys", () => {
    const idx = new ExpiryIndex("app/exp/");
    expect(idx.parse(idx.key(5, "run-1"))).toEqual({ expiresAt: 5, suffix: "run-1" });
    expect(idx.parse(idx.key(5, ""))).toEqual({ expiresAt: 5, suffix: "" });
    // Another prefix of the same length, with a well-formed time after it.
    expect(idx.parse(`app/eXp/${"5".padStart(16, "0")}run-1`)).toBeUndefined();
    // Its prefix, but not 16 digits after it.
    expect(idx.parse(`app/exp/${"5".padStart(15, "0")}x`)).toBeUndefined();
    expect(idx.parse("app/exp/12")).toBeUndefined();
    expect(idx.parse("app/exp/")).toBeUndefined();
  });
});

describe("enqueueWithEffects", () => {
  it("commits job and KV together; a dedup hit writes nothing", async () => {
    const { queue } = await openQueue();
    const r1 = await queue.enqueueWithEffects("q", enc("a"), { dedupKey: "run-1" }, new SettlementEffects().kvPut("run/1", enc("first")));
    expect(r1.outcome.newlyEnqueued).toBe(true);
    const r2 = await queue.enqueueWithEffects(
      "q",
      enc("b"),
      { dedupKey: "run-1" },
      new SettlementEffects().kvPut("run/1", enc("second")).kvPut("other", enc("x")),
    );
    expect(r2.outcome).toEqual({ jobId: r1.outcome.jobId, newlyEnqueued: false });
    expect(dec((await queue.kvGet("run/1"))!)).toBe("first");
    expect(await queue.kvGet("other")).toBeNull();
    await queue.close();
  });
});

describe("views", () => {
  it("lists jobs by state with cursors, reads jobs and stats", async () => {
    const { queue, clock } = await openQueue();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await queue.enqueue("q", enc(String(i)), { headers: { i: String(i) } })).jobId);
    const s1 = await queue.enqueue("q", enc("s1"), { runAt: clock.now() + 200 });
    await queue.enqueue("other", enc("o"), { runAt: clock.now() + 100 });
    const s2 = await queue.enqueue("q", enc("s2"), { runAt: clock.now() + 50 });
    const v = queue.view();
    const page1 = await v.listJobs("q", "pending", { limit: 2 });
    expect(page1.items.map((j) => j.id)).toEqual(ids.slice(0, 2));
    const page2 = await v.listJobs("q", "pending", { limit: 10, cursor: page1.nextCursor! });
    expect(page2.items.map((j) => j.id)).toEqual(ids.slice(2));
    expect(page2.nextCursor).toBeUndefined();
    expect((await v.listJobs("q", "scheduled")).items.map((j) => j.id)).toEqual([s2.jobId, s1.jobId]);
    const info = await v.job(ids[1]!);
    expect(info).toMatchObject({
      id: ids[1],
      queueName: "q",
      state: "pending",
      attempt: 0,
      maxAttempts: 3,
      headers: { i: "1" },
      payloadSize: 1,
      priority: 1000,
    });
    expect(await v.stats("q")).toEqual({ pending: 5, scheduled: 2, claimed: 0, done: 0, dead: 0 });
    await queue.claim("q");
    expect((await v.listJobs("q", "claimed")).items.map((j) => j.id)).toEqual([ids[0]]);
    await expect(v.listJobs("q", "weird" as "done")).rejects.toBeInstanceOf(ValidationError);
    await queue.close();
  });

  it("pages dead jobs by id", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { maxAttempts: 1 } });
    for (let i = 0; i < 3; i++) await queue.enqueue("q", enc(String(i)));
    for (let j = await queue.claim("q"); j; j = await queue.claim("q")) await queue.nack(j, "x");
    const all = await queue.view().deadJobs("q");
    expect(all).toHaveLength(3);
    const rest = await queue.view().deadJobs("q", { after: all[0]!.id, limit: 1 });
    expect(rest.map((j) => j.id)).toEqual([all[1]!.id]);
    await queue.close();
  });
});
