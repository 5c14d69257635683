/**
 * @module Caller KV keys of every shape through the queue's flat keys and
 * the memtable's declared key heads (engine/flat-string.ts), against a
 * plain Map: units around the heads' bounds (U+0000, U+007F, U+FFFF,
 * surrogate pairs whose UTF-16 order differs from their byte order), keys
 * that start a head and keys one unit past one, keys near the 1,024 bytes
 * a key may hold, puts and deletes, across checkpoints and reopens. Every
 * get answers the model's value and every paged scan of every prefix the
 * model's keys in byte order, none missed or repeated at a page's edge.
 * An empty key and one over the limit are refused.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, ValidationError } from "taquba";
import { testRandom } from "../support/seed.js";

const UNITS = ["a", "/", "\u0000", "\u007f", "\u00ff", "\ud7ff", "\ue000", "\uffff", "\ud83d\ude00", "\udbff\udfff", "0", "z"];
const HEADS = ["h/", "h/x", "a"];
const STEMS = ["", "h/", "h/x", "h/y", "a", "\uffff", "h/\uffff", "a\uffff"];
const PREFIXES = ["", "h/", "h/x", "h/y", "a", "\uffff", "h/\uffff", "\ud83d\ude00"];
const OPTIONS = { flushIntervalMs: 0, engineOptions: { checkpointWalObjects: 20 } };

const valueAt = (i: number) => new Uint8Array([i & 255, i >> 8]);
const byBytes = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));

async function scanAll(q: Queue, prefix: string, limit: number): Promise<string[]> {
  const keys: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await q.kvScan(prefix, { limit, ...(after === undefined ? {} : { after }) });
    keys.push(...page.entries.map((e) => e.key));
    if (page.nextCursor === undefined) return keys;
    after = page.nextCursor;
  }
}

describe("caller KV keys of every shape against a plain Map", () => {
  it("gets and paged scans answer the model through key heads, checkpoints and reopens", async () => {
    const r = testRandom("kv key shapes");
    const store = new MemoryStore();
    let q = await Queue.open(store, "q", OPTIONS);
    q.declareKeyHeads(HEADS);
    const model = new Map<string, number>();
    for (let i = 0; i < 1500; i++) {
      let key = STEMS[r.int(STEMS.length)]!;
      const units = r.int(4) === 0 ? 200 + r.int(140) : r.int(5);
      for (let j = 0; j < units; j++) key += UNITS[r.int(UNITS.length)]!;
      if (key.length === 0 || Buffer.byteLength(key) > 1024) continue;
      if (r.int(4) === 0 && model.size > 0) {
        const held = [...model.keys()][r.int(model.size)]!;
        await q.kvDelete(held);
        model.delete(held);
      } else {
        await q.kvPut(key, valueAt(i));
        model.set(key, i);
      }
      if (i % 300 !== 299) continue;
      if (r.int(2) === 0) {
        await q.close();
        q = await Queue.open(store, "q", OPTIONS);
        if (r.int(2) === 0) q.declareKeyHeads(HEADS);
      }
      for (const prefix of PREFIXES) {
        const want = [...model.keys()].filter((k) => k.startsWith(prefix)).sort(byBytes);
        for (const limit of [1, 7, 1000]) expect(await scanAll(q, prefix, limit), `prefix ${JSON.stringify(prefix)}, pages of ${limit}`).toEqual(want);
      }
      for (const [k, v] of model) expect(await q.kvGet(k), JSON.stringify(k)).toEqual(valueAt(v));
    }
    await q.close();
  }, 120_000);

  it("refuses an empty key and one past 1,024 bytes, and takes one of exactly 1,024", async () => {
    const q = await Queue.open(new MemoryStore(), "q", OPTIONS);
    try {
      await expect(q.kvPut("", valueAt(1))).rejects.toBeInstanceOf(ValidationError);
      const longest = `${"\uffff".repeat(341)}a`;
      expect(Buffer.byteLength(longest)).toBe(1024);
      await q.kvPut(longest, valueAt(2));
      expect(await q.kvGet(longest)).toEqual(valueAt(2));
      await expect(q.kvPut(`${longest}a`, valueAt(3))).rejects.toBeInstanceOf(ValidationError);
      await expect(q.kvPut("\ud800", valueAt(4))).rejects.toBeInstanceOf(ValidationError);
    } finally {
      await q.close();
    }
  });
});
