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
});
