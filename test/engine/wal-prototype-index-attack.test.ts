/**
 * @module Commits while `Object.prototype` holds a plain value under "0"
 * (what merging a parsed `{"__proto__": {"0": ...}}` sets for every object
 * of the process). The WAL writer read its list of sealed objects one past
 * the end to learn there was nothing more to send; that read found the
 * prototype's value instead of undefined, which was sent as a WAL object
 * (key `wal/...undefined`, no body) and closed the engine. Every commit now
 * lands, and a reopen reads them all.
 *
 * Under "-1" (`{"__proto__": {"-1": {}}}` merged), the writer's look at the
 * last group of waiters of an empty list found the prototype's object and
 * handed out its `promise` field: undefined, so the commit was acknowledged
 * before its WAL object was stored. A commit now waits for its put.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { whilePolluted } from "../support/polluted-prototype.js";
import { GatedStore } from "../support/gated-store.js";

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

describe('a commit under a plain object at "-1" on Object.prototype', () => {
  for (const flushIntervalMs of [0, 2]) {
    it(`is acknowledged only once its WAL object is stored (flushIntervalMs ${flushIntervalMs})`, async () => {
      const store = new GatedStore(new MemoryStore());
      const engine = await Engine.open(store, { flushIntervalMs, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });
      store.hold = (key) => key.startsWith("wal/");
      let acknowledged = false;
      await whilePolluted({ "-1": {} }, async () => {
        const commit = engine.commit(new WriteBatch().put("k", enc("v"))).then(() => {
          acknowledged = true;
        });
        await store.waitHeld(1);
        for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
        expect(acknowledged).toBe(false);
        store.hold = () => false;
        store.release(store.held[0]!.key);
        await commit;
      });
      expect(acknowledged).toBe(true);
      await engine.close();
      const again = await Engine.open(store);
      expect(dec(await again.get("k"))).toBe("v");
      await again.close();
    });
  }
});
