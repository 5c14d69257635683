/**
 * @module Random batches that cross the ASCII line, against a model: keys
 * of 1 to 5 and of 126 to 129 units (either side of the WAL's one-byte
 * length and its short-key limit), ASCII or with one unit at or past U+0080
 * (U+00E9, U+D7FF, U+E000, U+FFFF, a surrogate pair) at any position,
 * including a pair that straddles the 127th and 128th units; puts and
 * deletes; reopens between batches, so keys land in a memtable rebuilt
 * from the WAL. After every batch and every reopen, the scan lists the
 * model's keys in code point order and each key reads its value: the
 * memtable's skipped key-order check is only ever skipped for an ASCII
 * batch.
 */
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { describe, expect, it } from "vitest";
import { type TestRandom, testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const byCodePoint = (keys: Iterable<string>) => [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
const ODD = ["\u00e9", "\ud7ff", "\ue000", "\uffff", "\u{1f600}"];
const SHORT = [1, 2, 3, 5];
const LONG = [126, 127, 128, 129];

describe("commits of batches that cross the ASCII line, with reopens", () => {
  it("keep the model's keys, in code point order, and their values", async () => {
    const rnd = testRandom("commit-ascii-keys-mixed");
    // Fresh engines: the memtable's switch to code point order is for good, so each trial checks it anew.
    for (let trial = 0; trial < 4; trial++) await trialOf(rnd);
  });
});

/** One engine over a fresh store, 40 random batches with reopens between some, checked against the model after each. */
async function trialOf(rnd: TestRandom): Promise<void> {
  const store = new MemoryStore();
  let engine = await Engine.open(store);
  const model = new Map<string, string>();
  const key = (): string => {
    // Often a key seen before, so puts overwrite and deletes hit.
    if (model.size > 0 && rnd.int(3) === 0) {
      const known = [...model.keys()];
      return known[rnd.int(known.length)]!;
    }
    // Mostly short: a batch with a key of 128 units or more is never known ASCII, so it is always checked.
    const len = rnd.int(8) === 0 ? LONG[rnd.int(LONG.length)]! : SHORT[rnd.int(SHORT.length)]!;
    // One filler letter in most keys, so keys share heads and their order turns on the odd unit.
    let k = `k/${(rnd.int(4) === 0 ? "b" : "a").repeat(Math.max(0, len - 2))}`.slice(0, Math.max(2, len));
    if (rnd.int(2) === 0) {
      const odd = ODD[rnd.int(ODD.length)]!;
      // Any position from 2 (after the shared head) to the end; for a pair near 127 units, across the 127th and 128th.
      const at = len >= 127 && odd.length === 2 && rnd.int(2) === 0 ? 126 : 2 + rnd.int(k.length - 1);
      k = k.slice(0, at) + odd + k.slice(at);
    }
    return k;
  };
  try {
    for (let round = 0; round < 40; round++) {
      const b = new WriteBatch();
      const seen = new Set<string>();
      for (let i = 0, n = 1 + rnd.int(rnd.int(2) === 0 ? 4 : 24); i < n; i++) {
        const k = key();
        // One op per key in a batch.
        if (seen.has(k)) continue;
        seen.add(k);
        if (model.has(k) && rnd.int(3) === 0) {
          b.delete(k);
          model.delete(k);
        } else {
          const v = `${round}:${i}`;
          b.put(k, enc(v));
          model.set(k, v);
        }
      }
      await engine.commit(b);
      if (rnd.int(6) === 0) {
        await engine.close();
        engine = await Engine.open(store);
      }
      expect(Array.from(engine.scan(), ([k]) => k)).toEqual(byCodePoint(model.keys()));
      for (const [k, v] of model) expect(engine.get(k), k).toEqual(enc(v));
    }
  } finally {
    await engine.close();
  }
}
