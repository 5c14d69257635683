/**
 * @module Attacks on what a settlement's effects stage, between its check
 * and the commit that writes it: an options object or header set reused and
 * changed for the next job, an item or KV operation pushed into the effects
 * by hand or changed in place, headers whose reads answer differently each
 * time, prototype names as header names, a large payload's write awaited
 * while the options change. Every job and KV value must be what was checked,
 * or the commit must fail with a ValidationError and write nothing.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, Queue, SettlementEffects, ValidationError, type EnqueueOptions } from "taquba";
import { enc, dec } from "./helpers.js";

async function openWithClaimedJob(store = new MemoryStore()) {
  const q = await Queue.open(store, "q", { flushIntervalMs: 0 });
  await q.enqueue("steps", enc("first"));
  const first = (await q.claim("steps"))!;
  return { q, first, store };
}

async function claimAll(q: Queue, queue: string) {
  const out = [];
  for (let job = await q.claim(queue); job !== null; job = await q.claim(queue)) out.push(job);
  return out;
}

describe("staged enqueue options", () => {
  it("one options object reused for several staged jobs, changed between them, gives each job the options it had when staged", async () => {
    const { q, first, store } = await openWithClaimedJob();
    const headers: Record<string, string> = { step: "1" };
    const opts: EnqueueOptions = { headers, priority: 1, maxAttempts: 2, jobId: "job-1" };
    const fx = new SettlementEffects();
    fx.enqueue("next", enc("a"), opts);
    headers.step = "2";
    headers.extra = "only on the second";
    opts.priority = 2;
    opts.maxAttempts = 3;
    opts.jobId = "job-2";
    fx.enqueue("next", enc("b"), opts);
    // Changed again after the last staging, before the settlement: no staged job sees it.
    headers.step = "3";
    opts.jobId = "job-3";
    await q.ack(first, fx);
    const seen = (await claimAll(q, "next")).map((j) => ({ id: j.id, headers: { ...j.headers }, priority: j.priority, maxAttempts: j.maxAttempts }));
    seen.sort((a, b) => a.id.localeCompare(b.id));
    expect(seen).toEqual([
      { id: "job-1", headers: { step: "1" }, priority: 1, maxAttempts: 2 },
      { id: "job-2", headers: { step: "2", extra: "only on the second" }, priority: 2, maxAttempts: 3 },
    ]);
    await q.close();
    const reopened = await Queue.open(store, "q");
    expect(await reopened.view().job("job-3")).toBeNull();
    await reopened.close();
  });

  it("options made invalid after staging (an empty job id, a number as a header, a negative maxAttempts) are not what the settlement writes", async () => {
    const { q, first } = await openWithClaimedJob();
    const headers: Record<string, unknown> = { a: "1" };
    const opts: Record<string, unknown> = { headers, jobId: "kept" };
    const fx = new SettlementEffects().enqueue("next", enc("x"), opts as EnqueueOptions);
    headers.b = 42;
    opts.jobId = "";
    opts.maxAttempts = -5;
    opts.priority = Number.NaN;
    await q.ack(first, fx);
    const [job, ...rest] = await claimAll(q, "next");
    expect(rest).toEqual([]);
    expect(job!.id).toBe("kept");
    expect({ ...job!.headers }).toEqual({ a: "1" });
    expect(job!.maxAttempts).toBeGreaterThan(0);
    expect(Number.isNaN(job!.priority)).toBe(false);
    await q.close();
  });

  it("a staged item cannot be changed in place: its fields are fixed when staged", async () => {
    const { q, first } = await openWithClaimedJob();
    const fx = new SettlementEffects().enqueue("next", enc("x"), { jobId: "staged", headers: { a: "1" } });
    const item = fx.enqueues[0]! as { queueName: string; opts?: EnqueueOptions };
    expect(() => {
      item.opts = { jobId: "" };
    }).toThrow(TypeError);
    expect(() => {
      (item.opts!.headers as Record<string, string>).a = "changed";
    }).toThrow(TypeError);
    expect(() => {
      item.queueName = "";
    }).toThrow(TypeError);
    await q.ack(first, fx);
    const [job] = await claimAll(q, "next");
    expect(job!.id).toBe("staged");
    expect({ ...job!.headers }).toEqual({ a: "1" });
    await q.close();
  });

  it("an item pushed into the effects by hand is checked at the settlement: a bad one fails it with a ValidationError and writes nothing", async () => {
    const { q, first, store } = await openWithClaimedJob();
    const cases: { what: string; item: unknown }[] = [
      { what: "empty job id", item: { queueName: "next", payload: enc("x"), opts: { jobId: "" } } },
      { what: "number header", item: { queueName: "next", payload: enc("x"), opts: { headers: { a: 1 } } } },
      { what: "bad maxAttempts", item: { queueName: "next", payload: enc("x"), opts: { maxAttempts: -3 } } },
      { what: "empty queue name", item: { queueName: "", payload: enc("x") } },
      { what: "payload not bytes", item: { queueName: "next", payload: "x" } },
      { what: "null item", item: null },
    ];
    for (const c of cases) {
      const fx = new SettlementEffects().kvPut("written-with-it", enc(c.what));
      (fx.enqueues as unknown[]).push(c.item);
      await expect(q.ack(first, fx), c.what).rejects.toThrow(ValidationError);
    }
    expect(await q.kvGet("written-with-it")).toBeNull();
    expect(await q.claim("next")).toBeNull();
    // The job is still held by its claim and settles normally after the refusals.
    const good = new SettlementEffects();
    (good.enqueues as unknown[]).push({ queueName: "next", payload: enc("fine"), opts: { jobId: "by-hand", headers: { a: "1" } } });
    await q.ack(first, good);
    await q.close();
    const reopened = await Queue.open(store, "q");
    const job = (await reopened.claim("next"))!;
    expect(job.id).toBe("by-hand");
    expect(dec(job.payload)).toBe("fine");
    expect({ ...job.headers }).toEqual({ a: "1" });
    expect(await reopened.claim("next")).toBeNull();
    await reopened.close();
  });

  it("headers whose values answer differently on each read are stored as they were checked", async () => {
    const { q, first } = await openWithClaimedJob();
    let reads = 0;
    const shifty = new Proxy({ a: "1" } as Record<string, unknown>, {
      get: (target, name) => (typeof name === "string" && name === "a" ? (++reads === 1 ? "checked" : 42) : Reflect.get(target, name)),
    });
    const fx = new SettlementEffects().enqueue("next", enc("x"), { headers: shifty as Record<string, string> });
    await q.ack(first, fx);
    const [job] = await claimAll(q, "next");
    expect({ ...job!.headers }).toEqual({ a: "checked" });
    expect(reads).toBe(1);
    await q.close();
  });

  it("header names of Object.prototype's members round-trip through a claim and a reopen; __proto__ is refused however it is made", async () => {
    const store = new MemoryStore();
    const q = await Queue.open(store, "q", { flushIntervalMs: 0 });
    const names = ["constructor", "toString", "hasOwnProperty", "valueOf", "__defineGetter__", "isPrototypeOf"];
    const headers = Object.fromEntries(names.map((n) => [n, `v-${n}`]));
    await q.enqueue("p", enc("x"), { jobId: "protos", headers });
    const claimed = (await q.claim("p"))!;
    expect({ ...claimed.headers }).toEqual(headers);
    expect(Object.getPrototypeOf(claimed.headers)).toBe(Object.prototype);
    await q.nack(claimed, "again", undefined, { countAttempt: false });
    for (const made of [JSON.parse('{"__proto__":"x"}') as Record<string, string>, Object.defineProperty({}, "__proto__", { value: "x", enumerable: true })]) {
      await expect(q.enqueue("p", enc("x"), { headers: made })).rejects.toThrow(/__proto__/);
      expect(() => new SettlementEffects().enqueue("p", enc("x"), { headers: made })).toThrow(ValidationError);
    }
    await q.close();
    const reopened = await Queue.open(store, "q");
    const again = (await reopened.claim("p"))!;
    expect(again.id).toBe("protos");
    expect({ ...again.headers }).toEqual(headers);
    expect(await reopened.claim("p")).toBeNull();
    await reopened.close();
  });

  it("an enqueue whose large payload is written first keeps the options it was called with while the write is awaited", async () => {
    const store = new MemoryStore();
    const q = await Queue.open(store, "q", { flushIntervalMs: 0, payloadOffloadBytes: 16 });
    const headers: Record<string, string> = { a: "1" };
    const opts: EnqueueOptions = { jobId: "big", headers };
    const pending = q.enqueue("big", new Uint8Array(1024).fill(7), opts);
    const batch = q.enqueueBatch([{ queueName: "big", payload: new Uint8Array(1024).fill(8), opts }]).then(
      () => undefined,
      (err: unknown) => err,
    );
    // Changed in the caller's turn after the calls, while the payload objects are being written.
    headers.a = "changed";
    (headers as Record<string, unknown>).b = 5;
    opts.jobId = "";
    const outcome = await pending;
    expect(outcome.jobId).toBe("big");
    // The second enqueue of the id it was called with: refused, not written under the empty id it was changed to.
    expect(await batch).toBeInstanceOf(DuplicateJobIdError);
    const job = (await q.claim("big"))!;
    expect(job.id).toBe("big");
    expect({ ...job.headers }).toEqual({ a: "1" });
    expect(job.payload).toEqual(new Uint8Array(1024).fill(7));
    expect(await q.claim("big")).toBeNull();
    await q.close();
  });
});

describe("staged KV operations", () => {
  it("an operation pushed by hand is checked at the settlement: a bad one fails it and writes nothing", async () => {
    const { q, first, store } = await openWithClaimedJob();
    await q.kvPut("kept", enc("before"));
    const cases: { what: string; stage: (fx: SettlementEffects) => void; error: RegExp }[] = [
      { what: "empty key by hand", stage: (fx) => fx.kvOps.push({ kind: "put", key: "", value: enc("v") }), error: /KV key ""/ },
      { what: "lone surrogate key by hand", stage: (fx) => fx.kvOps.push({ kind: "delete", key: "a\ud800" }), error: /KV key/ },
      { what: "not a string key by hand", stage: (fx) => fx.kvOps.push({ kind: "put", key: 7 as unknown as string, value: enc("v") }), error: /KV key/ },
      { what: "value not bytes by hand", stage: (fx) => fx.kvOps.push({ kind: "put", key: "fine", value: "v" as unknown as Uint8Array }), error: /Uint8Array/ },
      {
        what: "unknown kind by hand",
        stage: (fx) => fx.kvOps.push({ kind: "putt", key: "kept" } as unknown as { kind: "delete"; key: string }),
        error: /kind "putt"/,
      },
    ];
    for (const c of cases) {
      const fx = new SettlementEffects().kvPut("written-with-it", enc(c.what)).enqueue("next", enc(c.what));
      c.stage(fx);
      await expect(q.ack(first, fx), c.what).rejects.toThrow(c.error);
    }
    expect(await q.kvGet("written-with-it")).toBeNull();
    expect(await q.kvGet("fine")).toBeNull();
    expect(dec((await q.kvGet("kept"))!)).toBe("before");
    expect(await q.claim("next")).toBeNull();
    // A good operation pushed by hand commits, and its array changed afterwards changes nothing stored.
    const value = enc("by hand");
    const good = new SettlementEffects();
    good.kvOps.push({ kind: "put", key: "fine", value });
    await q.ack(first, good);
    value.fill(0);
    expect(dec((await q.kvGet("fine"))!)).toBe("by hand");
    await q.close();
    const reopened = await Queue.open(store, "q");
    expect(dec((await reopened.kvGet("fine"))!)).toBe("by hand");
    expect(dec((await reopened.kvGet("kept"))!)).toBe("before");
    expect(await reopened.kvGet("written-with-it")).toBeNull();
    await reopened.close();
  });
  it("a staged operation's class, called by hand or extended, makes nothing: a ValidationError, and only what was checked commits", async () => {
    const { q, first } = await openWithClaimedJob();
    const fx = new SettlementEffects().kvPut("fine", enc("v")).kvDelete("gone");
    // Reachable from any staged op: called, it would stage a write under any engine key, the queue's own records included.
    const Put = fx.kvOps[0]!.constructor as new (...args: unknown[]) => object;
    const Delete = fx.kvOps[1]!.constructor as new (...args: unknown[]) => object;
    const attempts: [string, () => unknown][] = [
      ["the put's constructor", () => new Put("looks-fine", enc("evil"), "q/anything")],
      ["the put's constructor with a guessed first argument", () => new Put(Symbol("staged KV op"), "looks-fine", enc("evil"), "q/anything")],
      ["a class extending the put's", () => new (class extends Put {})("looks-fine", enc("evil"), "q/anything")],
      ["Reflect.construct of the delete's", () => Reflect.construct(Delete, ["looks-fine", "q/anything"])],
    ];
    for (const [what, make] of attempts) {
      let made: unknown;
      try {
        made = make();
      } catch (err) {
        expect(err, what).toBeInstanceOf(ValidationError);
        expect((err as Error).message, what).toMatch(/staged by SettlementEffects\.kvPut and kvDelete/);
        continue;
      }
      expect.fail(`${what} made ${String(made)}, which a commit would write unchecked`);
    }
    await q.ack(first, fx);
    expect(dec((await q.kvGet("fine"))!)).toBe("v");
    expect(await q.kvGet("looks-fine")).toBeNull();
    await q.close();
  });

  it("a staged operation cannot be changed in place: its key and value stay what was checked, and commit", async () => {
    const { q, first } = await openWithClaimedJob();
    const fx = new SettlementEffects().kvPut("fine", enc("v"));
    const op = fx.kvOps[0]! as { key: string; value: Uint8Array };
    expect(() => {
      op.key = "";
    }).toThrow(TypeError);
    expect(() => {
      op.value = new Uint8Array(2 * 1024 * 1024);
    }).toThrow(TypeError);
    await q.ack(first, fx);
    expect(dec((await q.kvGet("fine"))!)).toBe("v");
    await q.close();
  });
});
