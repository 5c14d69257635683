/**
 * @module An engine opened, written, checkpointed and reopened while
 * `Object.prototype` or `Array.prototype` holds a plain value under an
 * index ("0", "1", ...), as merging a parsed `{"__proto__": {"0": ...}}`
 * sets it. Reading an array past its end then finds that value instead of
 * undefined:
 *
 * - a manifest's publish looked for a newer manifest as the first key of
 *   an empty listing, so every open's claim failed with a `TypeError`;
 * - the release of a stored WAL object's commits by groups (after a slow
 *   put) looked for the next group one past the end of its list and
 *   threw from a timer, which ends a Node process.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { everyPutSlow } from "../support/every-put-slow.js";
import { INDEXED_PROTOTYPES, whileIndexed, whilePolluted } from "../support/polluted-prototype.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

/** Uncaught exceptions of the process while a test runs (a throw from a timer ends a process outside the tests). */
const uncaught: unknown[] = [];
const record = (e: unknown) => uncaught.push(e);
beforeEach(() => {
  uncaught.length = 0;
  process.on("uncaughtException", record);
});
afterEach(() => {
  process.off("uncaughtException", record);
});

describe("an engine under a plain value at an index of a prototype", () => {
  for (const [name, target] of INDEXED_PROTOTYPES) {
    for (const index of ["0", "1"]) {
      it(`opens an empty store, commits, checkpoints and reopens (${name}["${index}"])`, async () => {
        const store = new MemoryStore();
        await whileIndexed(target, index, { planted: true }, async () => {
          const engine = await Engine.open(store, { flushIntervalMs: 0 });
          for (let i = 0; i < 5; i++) await engine.commit(new WriteBatch().put(`a/${i}`, enc(`v${i}`)));
          await engine.checkpoint();
          await engine.commit(new WriteBatch().put("b", enc("w")));
          await engine.close();
          const again = await Engine.open(store, { flushIntervalMs: 0 });
          for (let i = 0; i < 5; i++) expect(dec(await again.get(`a/${i}`))).toBe(`v${i}`);
          expect(dec(await again.get("b"))).toBe("w");
          await again.close();
        });
        expect(uncaught).toEqual([]);
      });
    }
  }
});

/** Plain values under "0" to "15": whatever length a list ends at, the read past its end finds one. */
const LOW_INDEXES = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [String(i), { planted: i }]));

describe("a slow put's commits released by groups under plain values at indexes of Object.prototype", () => {
  everyPutSlow();

  it("are all acknowledged, nothing thrown from the release's timer, and a reopen reads them", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { flushIntervalMs: 0 });
    await whilePolluted(LOW_INDEXES, async () => {
      for (let wave = 0; wave < 5; wave++) {
        await Promise.all(Array.from({ length: 50 }, (_, i) => engine.commit(new WriteBatch().put(`w${wave}/${i}`, enc(`${wave}.${i}`)))));
      }
      // The release's last step runs a turn after the last acknowledgement.
      for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
    });
    expect(uncaught).toEqual([]);
    await engine.close();
    const again = await Engine.open(store);
    for (let wave = 0; wave < 5; wave++) for (let i = 0; i < 50; i++) expect(dec(await again.get(`w${wave}/${i}`))).toBe(`${wave}.${i}`);
    await again.close();
  });
});
