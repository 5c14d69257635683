/**
 * @module A commit's WAL encoding tells the memtable when every key of the
 * batch is ASCII, and the memtable then skips its per-key order check. The
 * answer must be exact: a batch with one key at or above U+D800 (a
 * surrogate pair, or U+E000..U+FFFF) must still switch the memtable to code
 * point order, whether it comes alone, among ASCII keys, or right after an
 * ASCII batch whose answer was yes; a batch the WAL refuses must leave no
 * answer behind for the next one.
 */
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { describe, expect, it } from "vitest";
import { EncodedKeys, WalBuilder } from "../../runtime/engine/wal-format.js";
import type { BatchOp } from "../../runtime/engine/write-batch.js";

const enc = (s: string) => new TextEncoder().encode(s);
const put = (key: string): BatchOp => ({ kind: "put", key, value: enc(key) });
const byCodePoint = (keys: string[]) => [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

async function scanKeys(engine: Engine): Promise<string[]> {
  return Array.from(engine.scan(), ([k]) => k);
}

describe("the ASCII answer of a commit's WAL encoding", () => {
  it("is yes only for a batch whose keys the encoding wrote as one byte per unit, and cleared on release", () => {
    const w = new WalBuilder(64);
    const keys = new EncodedKeys();
    w.add([put("q/jobs/a"), put("q/claimed/a"), { kind: "delete", key: "q/pending/a" }], undefined, keys);
    expect(keys.ascii).toBe(true);
    keys.release();
    expect(keys.ascii).toBe(false);
    // One op: written key by key, each key's length in bytes against its units.
    w.add([put("q/jobs/b")], undefined, keys);
    expect(keys.ascii).toBe(true);
    w.add([put("q/jobs/\uffff")], undefined, keys);
    expect(keys.ascii).toBe(false);
    w.add([{ kind: "delete", key: "q/jobs/\u00e9" }], undefined, keys);
    expect(keys.ascii).toBe(false);
    // More than 16 ops: written key by key; one key not ASCII among them, at the start or the end.
    const many = Array.from({ length: 20 }, (_, i) => put(`q/jobs/${i}`));
    w.add(many, undefined, keys);
    expect(keys.ascii).toBe(true);
    w.add([put("q/jobs/\u{10000}"), ...many], undefined, keys);
    expect(keys.ascii).toBe(false);
    w.add([...many, put("q/jobs/\u{10000}")], undefined, keys);
    expect(keys.ascii).toBe(false);
    // 130 units in 258 bytes: the first byte of that length (0x82) equals its units, yet it is not ASCII.
    w.add([put(`q/${"\u00e9".repeat(128)}`)], undefined, keys);
    expect(keys.ascii).toBe(false);
    w.add([put("q/jobs/c"), put("q/jobs/c\u00e9")], undefined, keys);
    expect(keys.ascii).toBe(false);
    w.add([put("q/jobs/d"), put("q/jobs/\u{1f600}")], undefined, keys);
    expect(keys.ascii).toBe(false);
    w.add([put("q/jobs/e"), put("q/jobs/\uffff")], undefined, keys);
    expect(keys.ascii).toBe(false);
    // A key of 128 units or more is written alone, even when ASCII.
    w.add([put("q/jobs/f"), put(`q/jobs/${"x".repeat(200)}`)], undefined, keys);
    expect(keys.ascii).toBe(false);
    w.add([put("q/jobs/g"), put("q/jobs/h")], undefined, keys);
    expect(keys.ascii).toBe(true);
  });

  for (const [name, batches] of [
    [
      "a batch of keys above U+D800 after ASCII batches",
      [
        ["k/a", "k/b"],
        ["k/c", "k/d", "k/e"],
        ["k/\uffff", "k/\u{10000}"],
      ],
    ],
    [
      "one such key among ASCII keys",
      [
        ["k/a", "k/b"],
        ["k/c", "k/\u{10000}", "k/d", "k/\uffff"],
      ],
    ],
    ["one such key alone after an ASCII batch", [["k/a", "k/\ue000x"], ["k/\u{10000}"]]],
    ["one such key alone after a single ASCII key", [["k/a"], ["k/\uffff"], ["k/b"], ["k/\u{10000}"]]],
    [
      "one such key among more than 16 ASCII keys",
      [Array.from({ length: 20 }, (_, i) => `k/${i}`), [...Array.from({ length: 20 }, (_, i) => `k/x${i}`), "k/\u{10000}"]],
    ],
    [
      "keys below U+D800 but not ASCII, then such keys",
      [
        ["k/a", "k/b"],
        ["k/\u00e9", "k/\ud7ff"],
        ["k/\ue000", "k/\u{1f600}"],
      ],
    ],
  ] as const) {
    it(`keeps code point order for ${name}, also after a reopen`, async () => {
      const store = new MemoryStore();
      let engine = await Engine.open(store);
      const all: string[] = [];
      for (const keys of batches) {
        const b = new WriteBatch();
        for (const k of keys) b.put(k, enc(k));
        all.push(...keys);
        await engine.commit(b);
      }
      // Keys between every pair above, so a wrong order puts them in the wrong leaf positions too.
      const b = new WriteBatch().put("k/\ufffe", enc("k/\ufffe")).put("k/z", enc("k/z"));
      all.push("k/\ufffe", "k/z");
      await engine.commit(b);
      expect(await scanKeys(engine)).toEqual(byCodePoint(all));
      for (const k of all) expect(engine.get(k)).toEqual(enc(k));
      await engine.close();
      engine = await Engine.open(store);
      expect(await scanKeys(engine)).toEqual(byCodePoint(all));
      await engine.close();
    });
  }

  it("leaves no answer behind when the WAL refuses a batch: the next one is checked", async () => {
    const engine = await Engine.open(new MemoryStore());
    await engine.commit(new WriteBatch().put("k/a", enc("a")).put("k/b", enc("b")));
    // Refused whole (a lone surrogate has no UTF-8 spelling): nothing of it is applied.
    await expect(engine.commit(new WriteBatch().put("k/c", enc("c")).put("k/\ud800", enc("x")))).rejects.toThrow();
    await engine.commit(new WriteBatch().put("k/\uffff", enc("f")));
    await engine.commit(new WriteBatch().put("k/\u{10000}", enc("g")).put("k/d", enc("d")));
    expect(await scanKeys(engine)).toEqual(["k/a", "k/b", "k/d", "k/\uffff", "k/\u{10000}"]);
    await engine.close();
  });
});
