/**
 * @module Attacks on how a commit tells an enqueue item or options object
 * that staging checked from one it must check again: objects that look
 * like, inherit from, wrap or copy a staged item (or its options), pushed
 * into a settlement's effects by hand. Each is checked at the commit: a
 * bad one fails the settlement with a ValidationError and writes nothing.
 */
import { describe, expect, it } from "vitest";
import { type EnqueueItem, type EnqueueOptions, MemoryStore, Queue, SettlementEffects, ValidationError } from "taquba";
import { enc } from "./helpers.js";

async function openWithClaimedJob() {
  const q = await Queue.open(new MemoryStore(), "q", { flushIntervalMs: 0 });
  await q.enqueue("steps", enc("first"));
  const first = (await q.claim("steps"))!;
  return { q, first };
}

function stagedItem(): EnqueueItem {
  return new SettlementEffects().enqueue("next", enc("x"), { jobId: "staged", headers: { a: "1" } }).enqueues[0]!;
}

describe("items and options made to pass for checked ones", () => {
  const forged: { what: string; make: () => unknown }[] = [
    {
      what: "an object inheriting from a staged item, its options shadowed",
      make: () => Object.create(stagedItem(), { opts: { value: { jobId: "" }, enumerable: true } }),
    },
    { what: "a spread copy of a staged item with a bad queue name", make: () => ({ ...stagedItem(), queueName: "" }) },
    {
      what: "an item whose field throws when read",
      make: () => ({
        queueName: "next",
        payload: enc("x"),
        get opts(): EnqueueOptions {
          throw new Error("no options today");
        },
      }),
    },
    {
      what: "staged options inherited from, with a bad job id over them",
      make: () => ({
        queueName: "next",
        payload: enc("x"),
        opts: Object.create(stagedItem().opts!, { jobId: { value: "", enumerable: true } }) as EnqueueOptions,
      }),
    },
    { what: "a staged item's options over a payload that is not bytes", make: () => ({ queueName: "next", payload: "x", opts: stagedItem().opts }) },
  ];
  for (const f of forged) {
    it(`${f.what}: checked at the settlement, refused, nothing written`, async () => {
      const { q, first } = await openWithClaimedJob();
      const fx = new SettlementEffects().kvPut("written-with-it", enc("x"));
      (fx.enqueues as unknown[]).push(f.make());
      await expect(q.ack(first, fx)).rejects.toThrow(ValidationError);
      expect(await q.kvGet("written-with-it")).toBeNull();
      expect(await q.claim("next")).toBeNull();
      await q.close();
    });
  }

  it("a staged item's or options' class, called by hand, extended or constructed through Reflect, makes nothing: a ValidationError, and the settlement commits only what was checked", async () => {
    const { q, first } = await openWithClaimedJob();
    const staged = stagedItem();
    // Reachable by any caller holding a staged item: the brand must not be had without the check.
    const Item = staged.constructor as new (...args: unknown[]) => EnqueueItem;
    const Opts = staged.opts!.constructor as new (...args: unknown[]) => EnqueueOptions;
    class Extended extends Item {}
    const attempts: [string, () => unknown][] = [
      ["the item's constructor", () => new Item("", "not bytes", { jobId: "", priority: Number.NaN })],
      ["the item's constructor with a guessed first argument", () => new Item(Symbol("checked enqueue"), "", "not bytes", {})],
      ["a class extending the item's", () => new Extended("", "not bytes", {})],
      ["Reflect.construct of the item's", () => Reflect.construct(Item, ["", "not bytes", {}], Extended)],
      ["the options' constructor", () => new Opts()],
      ["a class extending the options'", () => new (class extends Opts {})()],
    ];
    for (const [what, make] of attempts) {
      let made: unknown;
      try {
        made = make();
      } catch (err) {
        expect(err, what).toBeInstanceOf(ValidationError);
        expect((err as Error).message, what).toMatch(/made by SettlementEffects\.enqueue/);
        continue;
      }
      expect.fail(`${what} made ${String(made)}, which a commit would take as checked`);
    }
    const fx = new SettlementEffects().kvPut("written-with-it", enc("x")).enqueue("next", enc("y"), { jobId: "checked" });
    await q.ack(first, fx);
    expect(await q.kvGet("written-with-it")).toEqual(enc("x"));
    expect((await q.claim("next"))?.id).toBe("checked");
    await q.close();
  });

  it("a staged item's options reused for a second item by hand commit as they were checked", async () => {
    const { q, first } = await openWithClaimedJob();
    const staged = stagedItem();
    const fx = new SettlementEffects();
    (fx.enqueues as unknown[]).push(staged, { queueName: "other", payload: enc("y"), opts: { ...staged.opts, jobId: "copied" } });
    await q.ack(first, fx);
    expect((await q.view().job("staged"))?.headers).toEqual({ a: "1" });
    expect((await q.view().job("copied"))?.headers).toEqual({ a: "1" });
    await q.close();
  });

  it("a look-alike item whose options answer differently on a second read is read once and commits what was checked", async () => {
    const { q, first } = await openWithClaimedJob();
    let reads = 0;
    const item = new Proxy(
      { queueName: "next", payload: enc("x"), opts: { jobId: "fine" } as EnqueueOptions },
      { get: (t, k) => (k === "opts" && ++reads > 1 ? { jobId: "" } : Reflect.get(t, k)) },
    );
    const fx = new SettlementEffects();
    (fx.enqueues as unknown[]).push(item);
    await q.ack(first, fx);
    expect(reads).toBe(1);
    expect((await q.claim("next"))?.id).toBe("fine");
    await q.close();
  });
});
