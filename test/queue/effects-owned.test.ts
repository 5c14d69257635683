/**
 * @module Staged KV ops and what the commit trusts. `stageOwnedPut` and
 * `stageOwnedPutOnce` stage the workflow's freshly encoded records as they
 * are (no copy, no check at the commit); `kvPut` checks and copies a
 * caller's value once. An op made by hand and pushed onto `kvOps` is
 * checked and copied at the commit, and a bad one is refused there with
 * nothing committed. What was staged is what commits, whatever is done to
 * the op's public fields afterwards.
 */
import { describe, expect, it } from "vitest";
import { KvValueTooLargeError, MemoryStore, Queue, ValidationError } from "taquba";
import { type KvOp, SettlementEffects, stageOwnedPut, stageOwnedPutOnce } from "../../runtime/queue/effects.js";
import { ownedBytes } from "../../runtime/queue/owned-bytes.js";
import { Txn } from "../../runtime/queue/txn.js";
import * as effectsModule from "../../runtime/queue/effects.js";

/** Runs `settle` on a claimed job of a fresh queue; the queue stays open for `check`. */
async function withClaimedJob(settle: (queue: Queue, effects: SettlementEffects) => Promise<void>): Promise<void> {
  const queue = await Queue.open(new MemoryStore(), "q");
  try {
    await queue.enqueue("jobs", new Uint8Array([0]));
    await settle(queue, new SettlementEffects());
  } finally {
    await queue.close();
  }
}

describe("stageOwnedPut", () => {
  it("stages the very array given, where kvPut stages a copy", () => {
    const value = new Uint8Array([1, 2, 3]);
    const effects = new SettlementEffects();
    stageOwnedPut(effects, "a", ownedBytes(value));
    effects.kvPut("b", value);
    expect(effects.kvOps[0]).toEqual({ kind: "put", key: "a", value });
    expect((effects.kvOps[0] as { value: Uint8Array }).value).toBe(value);
    expect((effects.kvOps[1] as { value: Uint8Array }).value).not.toBe(value);
    expect(Object.keys(effects.kvOps[0]!)).toEqual(["kind", "key", "value"]);
  });

  it("refuses the keys and sizes kvPut refuses, staging nothing", () => {
    const effects = new SettlementEffects();
    expect(() => stageOwnedPut(effects, "", ownedBytes(new Uint8Array(1)))).toThrow(ValidationError);
    expect(() => stageOwnedPut(effects, "k", ownedBytes(new Uint8Array(2 * 1024 * 1024)))).toThrow(KvValueTooLargeError);
    expect(() => stageOwnedPutOnce(effects, "", ownedBytes(new Uint8Array(1)))).toThrow(ValidationError);
    expect(() => stageOwnedPutOnce(effects, "\ud800", ownedBytes(new Uint8Array(1)))).toThrow(ValidationError);
    expect(() => stageOwnedPutOnce(effects, "k", ownedBytes(new Uint8Array(2 * 1024 * 1024)))).toThrow(KvValueTooLargeError);
    expect(effects.kvOps).toEqual([]);
  });

  it("refuses a written-once key with kvPut's error, for any value a caller could pass", () => {
    const bad: unknown[] = ["", "\ud800", "a\udc00b", "k".repeat(1025), "é".repeat(513), null, undefined, 7, Number.NaN, {}, Symbol("k")];
    for (const key of bad) {
      const once = new SettlementEffects();
      let expected: unknown;
      try {
        new SettlementEffects().kvPut(key as string, new Uint8Array(1));
      } catch (e) {
        expected = e;
      }
      expect(expected).toBeInstanceOf(ValidationError);
      expect(() => stageOwnedPutOnce(once, key as string, ownedBytes(new Uint8Array(1)))).toThrow((expected as Error).message);
      expect(once.kvOps).toEqual([]);
    }
  });

  it("stages a written-once key built by concatenation as the caller key it names", () => {
    const effects = new SettlementEffects();
    const parts = ["workflow/history/", "q", "/", "01JRUN", "/", "0000000003"];
    stageOwnedPutOnce(effects, parts.join(""), ownedBytes(new Uint8Array([1])));
    stageOwnedPutOnce(effects, "k".repeat(1024), ownedBytes(new Uint8Array([2])));
    stageOwnedPutOnce(effects, "é😀", ownedBytes(new Uint8Array([3])));
    expect(effects.kvOps.map((op) => op.key)).toEqual(["workflow/history/q/01JRUN/0000000003", "k".repeat(1024), "é😀"]);
    const txn = new Txn(new MemoryOnlySource());
    effectsModule.commitKvOps(effects, txn);
    expect(txn.batch.ops.map((op) => op.key)).toEqual(["u/workflow/history/q/01JRUN/0000000003", `u/${"k".repeat(1024)}`, "u/é😀"]);
  });

  it("commits a kept key's put and a written-once key's put with the settlement, also merged into other effects", async () => {
    await withClaimedJob(async (queue, effects) => {
      // Read in the caller's turn: the key is kept from now on, and staging it carries its engine key.
      expect(queue.kvGetNow("runs/1")).toBeNull();
      stageOwnedPut(effects, "runs/1", ownedBytes(new Uint8Array([4, 2])));
      const once = new SettlementEffects();
      stageOwnedPutOnce(once, "history/1/0000000001", ownedBytes(new Uint8Array([7])));
      effects.kvPut("a", new Uint8Array([1])).merge(once);
      await queue.ack((await queue.claim("jobs"))!, effects);
      expect(await queue.kvGet("runs/1")).toEqual(new Uint8Array([4, 2]));
      expect(await queue.kvGet("history/1/0000000001")).toEqual(new Uint8Array([7]));
      expect((await queue.kvScan("")).entries.map((e) => e.key)).toEqual(["a", "history/1/0000000001", "runs/1"]);
    });
  });

  it("takes no caller array without a declaration, and the staged op classes are not reachable (type checks)", () => {
    const effects = new SettlementEffects();
    const txn = new Txn(new MemoryOnlySource());
    const callers = new Uint8Array([1]);
    // @ts-expect-error a caller's array is not owned: it goes through kvPut (checked and copied) instead.
    stageOwnedPut(effects, "k", callers);
    // @ts-expect-error nor can a transaction take one.
    txn.put("u/k", callers);
    // @ts-expect-error the staged op classes are private to the effects module.
    expect(effectsModule.StagedPut).toBeUndefined();
    expect(Object.keys(effectsModule).filter((k) => k.startsWith("Staged"))).toEqual([]);
  });
});

describe("ops pushed onto kvOps by hand", () => {
  it("an object dressed as a staged op (its prototype taken) is checked and copied like any hand-made op", async () => {
    await withClaimedJob(async (queue, effects) => {
      effects.kvPut("a", new Uint8Array([1]));
      const staged = effects.kvOps[0]!;
      const value = new Uint8Array([5, 6]);
      const forged = Object.setPrototypeOf({ kind: "put", key: "b", value }, Object.getPrototypeOf(staged) as object) as KvOp;
      effects.kvOps.push(forged);
      await queue.ack((await queue.claim("jobs"))!, effects);
      value[0] = 9;
      expect(await queue.kvGet("b")).toEqual(new Uint8Array([5, 6]));
      expect(queue.kvGetNow("b")).toEqual(new Uint8Array([5, 6]));
    });
  });

  it("each bad op is refused at the settlement, naming it, with nothing committed and the job still claimed", async () => {
    const detached = new Uint8Array(new ArrayBuffer(4));
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    const bad: [unknown, RegExp][] = [
      [null, /KV op 1 of the effects must be an object/],
      [{ kind: "upsert", key: "k" }, /KV op 1 of the effects has kind "upsert"/],
      [{ kind: "put", key: "", value: new Uint8Array(1) }, /KV key/],
      [{ kind: "delete", key: 7 }, /KV key/],
      [{ kind: "put", key: "k", value: "text" }, /the value for KV key "k" must be a Uint8Array/],
      [{ kind: "put", key: "k", value: new Proxy(new Uint8Array(2), {}) }, /must be a Uint8Array/],
      [{ kind: "put", key: "k", value: detached }, /detached or shrunk ArrayBuffer/],
      [{ kind: "put", key: "k", value: new Uint8Array(2 * 1024 * 1024) }, /k/],
      [
        {
          kind: "put",
          get key(): string {
            throw new Error("no key here");
          },
        },
        /KV op 1 of the effects cannot be read \(no key here\)/,
      ],
    ];
    for (const [op, message] of bad) {
      await withClaimedJob(async (queue, effects) => {
        effects.kvPut("a", new Uint8Array([1]));
        effects.kvOps.push(op as KvOp);
        const job = (await queue.claim("jobs"))!;
        await expect(queue.ack(job, effects)).rejects.toThrow(message);
        expect(await queue.kvGet("a")).toBeNull();
        expect((await queue.view().stats("jobs")).claimed).toBe(1);
        // The same job settles once its effects are right.
        effects.kvOps.pop();
        await queue.ack(job, effects);
        expect(await queue.kvGet("a")).toEqual(new Uint8Array([1]));
      });
    }
  });

  it("a staged op's public fields cannot be written over, and always name what commits", async () => {
    await withClaimedJob(async (queue, effects) => {
      effects.kvPut("a", new Uint8Array([1])).kvDelete("gone");
      await queue.kvPut("gone", new Uint8Array([2]));
      const [put, del] = effects.kvOps as { key: string; value?: unknown }[];
      expect(() => {
        put!.key = "wf/elsewhere";
      }).toThrow(TypeError);
      expect(() => {
        put!.value = new Proxy(new Uint8Array(3), {});
      }).toThrow(TypeError);
      expect(() => {
        del!.key = "a";
      }).toThrow(TypeError);
      // Past the freeze (a property redefined is refused too): the commit reads what was staged.
      expect(() => Object.defineProperty(put!, "key", { value: "elsewhere" })).toThrow(TypeError);
      await queue.ack((await queue.claim("jobs"))!, effects);
      expect(await queue.kvGet("a")).toEqual(new Uint8Array([1]));
      expect(await queue.kvGet("gone")).toBeNull();
      expect(await queue.kvGet("wf/elsewhere")).toBeNull();
    });
  });
});

/** A read source with nothing in it, for a transaction that is never committed. */
class MemoryOnlySource {
  get(): undefined {
    return undefined;
  }
  *scan(): Iterable<[string, Uint8Array]> {}
}
