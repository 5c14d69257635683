/**
 * @module Commits while `Object.prototype` holds a plain value under "0"
 * (what merging a parsed `{"__proto__": {"0": ...}}` sets for every object
 * of the process). The WAL writer read its list of sealed objects one past
 * the end to learn there was nothing more to send; that read found the
 * prototype's value instead of undefined, which was sent as a WAL object
 * (key `wal/...undefined`, no body) and closed the engine. Every commit now
 * lands, and a reopen reads them all.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { whilePolluted } from "../support/polluted-prototype.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

describe('commits under a plain "0" on Object.prototype', () => {
  for (const flushIntervalMs of [0, 2]) {
    it(`land, alone and many at once, and a reopen reads them (flushIntervalMs ${flushIntervalMs})`, async () => {
      const store = new MemoryStore();
      const engine = await Engine.open(store, { flushIntervalMs, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });
      await whilePolluted({ "0": "planted" }, async () => {
        for (let i = 0; i < 5; i++) await engine.commit(new WriteBatch().put(`one/${i}`, enc(`v${i}`)));
        await Promise.all(Array.from({ length: 40 }, (_, i) => engine.commit(new WriteBatch().put(`many/${i}`, enc(`w${i}`)))));
        await engine.commit(new WriteBatch().put("last", enc("z")));
      });
      await engine.close();
      const again = await Engine.open(store);
      for (let i = 0; i < 5; i++) expect(dec(await again.get(`one/${i}`))).toBe(`v${i}`);
      for (let i = 0; i < 40; i++) expect(dec(await again.get(`many/${i}`))).toBe(`w${i}`);
      expect(dec(await again.get("last"))).toBe("z");
      await again.close();
    });
  }
});
