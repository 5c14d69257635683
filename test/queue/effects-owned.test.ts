/**
 * @module `SettlementEffects.kvPutOwned`: the workflow's freshly encoded
 * records are staged as they are (no copy), checked like any `kvPut`, and
 * committed with the settlement.
 */
import { describe, expect, it } from "vitest";
import { KvValueTooLargeError, MemoryStore, Queue, ValidationError } from "taquba";
import { SettlementEffects } from "../../runtime/queue/effects.js";

describe("SettlementEffects.kvPutOwned", () => {
  it("stages the very array given, where kvPut stages a copy", () => {
    const value = new Uint8Array([1, 2, 3]);
    const effects = new SettlementEffects().kvPutOwned("a", value).kvPut("b", value);
    expect(effects.kvOps[0]).toEqual({ kind: "put", key: "a", value });
    expect((effects.kvOps[0] as { value: Uint8Array }).value).toBe(value);
    expect((effects.kvOps[1] as { value: Uint8Array }).value).not.toBe(value);
  });

  it("refuses the keys and values kvPut refuses, staging nothing", () => {
    const effects = new SettlementEffects();
    expect(() => effects.kvPutOwned("", new Uint8Array(1))).toThrow(ValidationError);
    expect(() => effects.kvPutOwned("k", new Uint8Array(2 * 1024 * 1024))).toThrow(KvValueTooLargeError);
    expect(() => effects.kvPutOwned("k", "text" as unknown as Uint8Array)).toThrow(ValidationError);
    expect(effects.kvOps).toEqual([]);
  });

  it("commits with the settlement", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      await queue.enqueue("jobs", new Uint8Array([0]));
      const job = await queue.claim("jobs");
      await queue.ack(job!, new SettlementEffects().kvPutOwned("k", new Uint8Array([9, 8])));
      expect(await queue.kvGet("k")).toEqual(new Uint8Array([9, 8]));
    } finally {
      await queue.close();
    }
  });

  it("commits a kept key's put under that caller key, and the op reads as a plain put", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      // Read in the caller's turn: the key is kept from now on, and staging it carries its engine key.
      expect(queue.kvGetNow("runs/1")).toBeNull();
      const value = new Uint8Array([4, 2]);
      const effects = new SettlementEffects().kvPutOwned("runs/1", value);
      expect(effects.kvOps).toEqual([{ kind: "put", key: "runs/1", value }]);
      expect(Object.keys(effects.kvOps[0]!)).toEqual(["kind", "key", "value"]);
      await queue.enqueue("jobs", new Uint8Array([0]));
      await queue.ack((await queue.claim("jobs"))!, effects);
      expect(await queue.kvGet("runs/1")).toEqual(value);
      expect((await queue.kvScan("")).entries.map((e) => e.key)).toEqual(["runs/1"]);
    } finally {
      await queue.close();
    }
  });
});

describe("SettlementEffects.kvPutOnce", () => {
  it("refuses the keys and values kvPut refuses, staging nothing", () => {
    const effects = new SettlementEffects();
    expect(() => effects.kvPutOnce("", new Uint8Array(1))).toThrow(ValidationError);
    expect(() => effects.kvPutOnce("\ud800", new Uint8Array(1))).toThrow(ValidationError);
    expect(() => effects.kvPutOnce("k", new Uint8Array(2 * 1024 * 1024))).toThrow(KvValueTooLargeError);
    expect(() => effects.kvPutOnce("k", "text" as unknown as Uint8Array)).toThrow(ValidationError);
    expect(effects.kvOps).toEqual([]);
  });

  it("stages the array given and commits it under the caller key, also merged into other effects", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      const value = new Uint8Array([7]);
      const once = new SettlementEffects().kvPutOnce("history/1/0000000001", value);
      expect(once.kvOps).toEqual([{ kind: "put", key: "history/1/0000000001", value }]);
      expect((once.kvOps[0] as { value: Uint8Array }).value).toBe(value);
      const effects = new SettlementEffects().kvPut("a", new Uint8Array([1])).merge(once);
      await queue.enqueue("jobs", new Uint8Array([0]));
      await queue.ack((await queue.claim("jobs"))!, effects);
      expect(await queue.kvGet("history/1/0000000001")).toEqual(value);
      expect(await queue.kvGet("a")).toEqual(new Uint8Array([1]));
      const page = await queue.kvScan("");
      expect(page.entries.map((e) => e.key)).toEqual(["a", "history/1/0000000001"]);
    } finally {
      await queue.close();
    }
  });
});
