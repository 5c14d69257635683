/**
 * @module `Queue.kvKeyRef`: a caller key checked once, then read, tokened and
 * written by reference on every step. What is stored, read and refused is
 * what the key itself gives.
 */
import { describe, expect, it } from "vitest";
import { SettlementEffects, ValidationError } from "taquba";
import { stageOwnedPut } from "../../runtime/queue/effects.js";
import { ownedBytes } from "../../runtime/queue/owned-bytes.js";
import { enc, openQueue } from "./helpers.js";

describe("Queue.kvKeyRef", () => {
  it("refuses a key that is not valid, as kvGetNow does", async () => {
    const { queue } = await openQueue();
    try {
      for (const bad of ["", "\ud800", "x".repeat(2000)]) expect(() => queue.kvKeyRef(bad)).toThrow(ValidationError);
    } finally {
      await queue.close();
    }
  });

  it("refuses a reference made by calling the constructor of one, so no shown key pairs with another engine key", async () => {
    const { queue } = await openQueue();
    try {
      await queue.kvPut("shown", enc("caller's"));
      const ref = queue.kvKeyRef("shown");
      // The constructor is private to the type checker only; any reference reaches it at run time.
      const Forge = ref.constructor as unknown as new (...args: unknown[]) => typeof ref;
      expect(() => new Forge("shown", "x")).toThrow(ValidationError);
      expect(() => Reflect.construct(Forge, [Symbol("KV key reference"), "shown", "x"])).toThrow(/not by calling the constructor/);
      expect(queue.kvGetNow(ref)).toEqual(enc("caller's"));
    } finally {
      await queue.close();
    }
  });

  it("reads, tokens and writes the key's own value, also after thousands of other keys were kept", async () => {
    const { queue } = await openQueue();
    try {
      await queue.kvPut("runs/a", enc("1"));
      await queue.kvPut("runs/b", enc("2"));
      const a = queue.kvKeyRef("runs/a");
      const b = queue.kvKeyRef("runs/b");
      expect(a.key).toBe("runs/a");
      // Other keys in use push the references' keys out of the kept generations; the references still hold.
      for (let i = 0; i < 5000; i++) queue.kvGetNow(`filler/${i}`);
      expect(queue.kvGetNow(a)).toEqual(enc("1"));
      expect(queue.kvGetNow(b)).toEqual(enc("2"));
      expect(queue.kvTokenNow(a)).toBe(queue.kvTokenNow("runs/a"));
      expect(queue.kvTokenNow(a)).not.toBe(queue.kvTokenNow(b));
      const before = queue.kvTokenNow(a);

      await queue.enqueue("jobs", enc("j"));
      const effects = new SettlementEffects();
      stageOwnedPut(effects, a, ownedBytes(enc("3")));
      expect(effects.kvOps).toEqual([{ kind: "put", key: "runs/a", value: enc("3") }]);
      await queue.ack((await queue.claim("jobs"))!, effects);
      expect(await queue.kvGet("runs/a")).toEqual(enc("3"));
      expect(queue.kvGetNow(a)).toEqual(enc("3"));
      expect(queue.kvTokenNow(a)).not.toBe(before);
      expect(await queue.kvGet("runs/b")).toEqual(enc("2"));
      expect((await queue.kvScan("runs/")).entries.map((e) => e.key)).toEqual(["runs/a", "runs/b"]);
    } finally {
      await queue.close();
    }
  });

  it("refuses an oversize value by reference, staging nothing", async () => {
    const { queue } = await openQueue();
    try {
      const effects = new SettlementEffects();
      expect(() => stageOwnedPut(effects, queue.kvKeyRef("k"), ownedBytes(new Uint8Array(2 * 1024 * 1024)))).toThrow(/k/);
      expect(effects.kvOps).toEqual([]);
    } finally {
      await queue.close();
    }
  });
});
