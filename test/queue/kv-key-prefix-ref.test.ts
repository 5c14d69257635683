/**
 * @module `KvKeyPrefixRef`: a caller key prefix checked once, and keys under
 * it staged by their suffix alone (a workflow run's history entries). What
 * commits and what is refused is what the whole key gives through `kvPut`.
 */
import { describe, expect, it } from "vitest";
import { SettlementEffects, ValidationError } from "taquba";
import { stageOwnedPutUnder } from "../../runtime/queue/effects.js";
import { ownedBytes } from "../../runtime/queue/owned-bytes.js";
import { KvKeyPrefixRef } from "../../runtime/queue/user-keys.js";
import { MAX_KV_KEY_BYTES } from "../../runtime/queue/names.js";
import { enc, openQueue } from "./helpers.js";

describe("KvKeyPrefixRef", () => {
  it("stages a key under the prefix that commits and reads as the whole key does", async () => {
    const { queue } = await openQueue();
    try {
      const prefix = KvKeyPrefixRef.of("runs/é/");
      const effects = new SettlementEffects();
      stageOwnedPutUnder(effects, prefix, "0000000007", ownedBytes(enc("entry")));
      expect(effects.kvOps).toEqual([{ kind: "put", key: "runs/é/0000000007", value: enc("entry") }]);
      await queue.enqueue("jobs", enc("j"));
      await queue.ack((await queue.claim("jobs"))!, effects);
      expect(await queue.kvGet("runs/é/0000000007")).toEqual(enc("entry"));
      expect((await queue.kvScan("runs/")).entries.map((e) => e.key)).toEqual(["runs/é/0000000007"]);
    } finally {
      await queue.close();
    }
  });

  it("refuses what the whole key would refuse, naming it, and stages nothing", () => {
    const prefix = KvKeyPrefixRef.of("p/");
    const effects = new SettlementEffects();
    const room = MAX_KV_KEY_BYTES - 2;
    // A lone surrogate in the suffix, a suffix past the key's size, an empty key under an empty prefix.
    expect(() => stageOwnedPutUnder(effects, prefix, "\ud800", ownedBytes(enc("v")))).toThrow(ValidationError);
    expect(() => stageOwnedPutUnder(effects, prefix, "x".repeat(room + 1), ownedBytes(enc("v")))).toThrow(/invalid KV key "p\/xxx/);
    expect(() => stageOwnedPutUnder(effects, KvKeyPrefixRef.of(""), "", ownedBytes(enc("v")))).toThrow(/invalid KV key ""/);
    // Two bytes of UTF-8 for one unit: counted as bytes, not units.
    expect(() => stageOwnedPutUnder(effects, prefix, "é".repeat(room / 2 + 1), ownedBytes(enc("v")))).toThrow(ValidationError);
    expect(effects.kvOps).toEqual([]);
    stageOwnedPutUnder(effects, prefix, "x".repeat(room), ownedBytes(enc("v")));
    stageOwnedPutUnder(effects, KvKeyPrefixRef.of(""), "k", ownedBytes(enc("v")));
    expect(effects.kvOps.map((op) => op.key)).toEqual([`p/${"x".repeat(room)}`, "k"]);
  });

  it("refuses a prefix that is not well-formed, and a reference made by calling its constructor", () => {
    expect(() => KvKeyPrefixRef.of("\udc00/")).toThrow(ValidationError);
    const ref = KvKeyPrefixRef.of("p/");
    const Forge = ref.constructor as unknown as new (...args: unknown[]) => typeof ref;
    expect(() => Reflect.construct(Forge, [Symbol("KV key reference"), "p/", "x", 2])).toThrow(/not by calling the constructor/);
  });
});
