/**
 * @module Caller ids of one commit, chosen by a hostile caller: ids that
 * name Object.prototype's members ("__proto__", "constructor", "toString")
 * are ids like any other (kept, found, refused when named twice); ids the
 * queue refuses (empty, past 128 characters, 10 KB, a lone surrogate, a
 * space, another script's letters) refuse the whole batch naming the item,
 * with nothing enqueued; a run of later items naming every id the batch's
 * generated items would draw next makes each draw pass over all of them;
 * and the ULID's lowercase spelling is an id of its own.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, ValidationError } from "taquba";
import { nextUlid, ulidAfter } from "../support/next-ulid.js";
import { drainPayloads, enc, openQueue } from "./helpers.js";

async function rejection(act: () => Promise<unknown>): Promise<unknown> {
  return act().then(
    () => expect.fail("expected a refusal"),
    (e: unknown) => e,
  );
}

const PROTOTYPE_NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"];

describe("odd caller ids in one commit", () => {
  it("ids named after Object.prototype's members are kept and found as any other, and one named twice is refused with nothing enqueued", async () => {
    const { queue } = await openQueue();
    const out = await queue.enqueueBatch([
      ...PROTOTYPE_NAMES.map((jobId) => ({ queueName: "q", payload: enc(jobId), opts: { jobId } })),
      { queueName: "q", payload: enc("generated") },
    ]);
    expect(out.slice(0, PROTOTYPE_NAMES.length)).toEqual(PROTOTYPE_NAMES.map((jobId) => ({ jobId, newlyEnqueued: true })));
    for (const id of PROTOTYPE_NAMES) expect((await queue.view().job(id))?.id, id).toBe(id);
    for (const id of PROTOTYPE_NAMES) {
      const err = await rejection(() =>
        queue.enqueueBatch([
          { queueName: "r", payload: enc("a"), opts: { jobId: `${id}-again` } },
          { queueName: "r", payload: enc("b") },
          { queueName: "r", payload: enc("c"), opts: { jobId: `${id}-again` } },
        ]),
      );
      expect(err, id).toBeInstanceOf(DuplicateJobIdError);
      expect((err as Error).message).toContain("items 0 and 2");
      // Named once in a batch, but held by a job: refused as in use.
      const held = await rejection(() =>
        queue.enqueueBatch([
          { queueName: "r", payload: enc("x") },
          { queueName: "r", payload: enc("y"), opts: { jobId: id } },
        ]),
      );
      expect(held, id).toBeInstanceOf(DuplicateJobIdError);
      expect((held as Error).message).toContain("already used by an existing job");
    }
    expect((await queue.view().stats("r")).pending).toBe(0);
    expect((await drainPayloads(queue, "q")).sort()).toEqual([...PROTOTYPE_NAMES, "generated"].sort());
    await queue.close();
  });

  it.each([
    ["empty", ""],
    ["129 characters", "a".repeat(129)],
    ["10 KB", "a".repeat(10_240)],
    ["a lone surrogate", "order-\uD800"],
    ["two lone surrogates that UTF-8 would both turn into U+FFFD", "\uDC00"],
    ["a space", "order 7"],
    ["another script's letters", "заказ-7"],
  ])("an id %s refuses the batch naming the item, and nothing is enqueued", async (_name, jobId) => {
    const { queue } = await openQueue();
    const err = await rejection(() =>
      queue.enqueueBatch([
        { queueName: "q", payload: enc("fine"), opts: { jobId: "fine-1" } },
        { queueName: "q", payload: enc("generated") },
        { queueName: "q", payload: enc("odd"), opts: { jobId } },
      ]),
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/item 2/);
    expect((err as Error).message).toMatch(/invalid job id/);
    // Quoted within bounds: a 10 KB id is not repeated whole in the message.
    expect((err as Error).message.length).toBeLessThan(1_000);
    expect((await queue.view().stats("q")).pending).toBe(0);
    expect(await queue.view().job("fine-1")).toBeNull();
    await queue.close();
  });

  it("later items naming every id the generated items would draw next: each draw passes over all of them, and every job is kept", async () => {
    const { queue } = await openQueue();
    // The clock stands still: the batch's draws count up from the id after `first`.
    const first = (await queue.enqueue("q", enc("first"))).jobId;
    const named = Array.from({ length: 12 }, (_, i) => ulidAfter(first, i + 1));
    const items = [
      { queueName: "q", payload: enc("g0") },
      { queueName: "q", payload: enc("g1") },
      ...named.map((jobId, i) => ({ queueName: "q", payload: enc(`n${i}`), opts: { jobId } })),
      { queueName: "q", payload: enc("g2") },
      // The lowercase spelling of the id after the named ones is an id of its own.
      { queueName: "q", payload: enc("lower"), opts: { jobId: nextUlid(named.at(-1)!).toLowerCase() } },
    ];
    const out = await queue.enqueueBatch(items);
    const ids = out.map((o) => o.jobId);
    expect(new Set(ids).size).toBe(items.length);
    expect(out.every((o) => o.newlyEnqueued)).toBe(true);
    for (const g of [0, 1, 14]) expect(named).not.toContain(ids[g]);
    expect(ids.slice(2, 14)).toEqual(named);
    expect(await drainPayloads(queue, "q")).toHaveLength(items.length + 1);
    await queue.close();
  });
});
