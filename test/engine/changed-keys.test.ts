/**
 * The checkpoint's changed keys (changed-keys.ts): a hash map over key bytes
 * must behave as a `Map` of strings for every operation the engine uses, and
 * order keys as `compareKeys` does.
 */
import { describe, expect, it } from "vitest";
import { ChangedKeys, ChangedKeysSpares } from "../../runtime/engine/changed-keys.js";
import { hashFrom } from "../../runtime/engine/key-hash.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { collidingKeys, FNV_START, fnvFrom } from "../support/colliding-keys.js";
import { testRandom } from "../support/seed.js";
import { HEAVY_TEST_MS } from "../support/load.js";

describe("ChangedKeys", () => {
  it("made with room for some keys, holds far more and far fewer, and yields only the entries a test picks, decoded", () => {
    for (const expected of [
      { keys: 0, keyBytes: 0 },
      { keys: 50, keyBytes: 500 },
      { keys: 100_000, keyBytes: 2_000_000 },
    ]) {
      const model = new Map<string, number | null>();
      const keys = new ChangedKeys<number | null>(undefined, expected);
      for (let i = 0; i < 5_000; i++) {
        const key = `k/${(i * 31) % 3001}/${"é".repeat(i % 4)}`;
        const value = i % 5 === 0 ? null : i;
        model.set(key, value);
        keys.set(key, value);
      }
      expect(keys.size).toBe(model.size);
      expect([...keys.entries()]).toEqual([...model.entries()]);
      for (const [k, v] of model) expect(keys.get(k)).toBe(v);
      const picked = [...model.entries()].filter(([, v]) => v !== null && v % 2 === 0);
      expect(picked.length).toBeGreaterThan(0);
      expect([...keys.entriesWhere((v) => v !== null && v % 2 === 0)]).toEqual(picked);
    }
  });

  it("matches a Map under inserts and replacements, past several growths of its table and buffers", () => {
    const model = new Map<string, number | null>();
    const keys = new ChangedKeys<number | null>();
    const alphabet = ["a", "/", "é", "\u{1f600}", "z", "0", "\uffff"];
    for (let i = 0; i < 20_000; i++) {
      // Many keys come back (replacements), some are long enough to outgrow a buffer at once.
      const n = (i * 7919) % 9001;
      const key = `k/${n}/${alphabet[n % alphabet.length]!.repeat(1 + (n % 3))}${n % 1000 === 0 ? "x".repeat(3000) : ""}`;
      const value = i % 11 === 0 ? null : i;
      model.set(key, value);
      keys.set(key, value);
      if (i % 97 === 0) expect(keys.size).toBe(model.size);
    }
    expect(keys.size).toBe(model.size);
    expect([...keys.entries()]).toEqual([...model.entries()]);
    expect([...keys.keys()]).toEqual([...model.keys()]);
    for (const [k, v] of model) expect(keys.get(k)).toBe(v);
    expect(keys.get("k/absent")).toBeUndefined();
    // A key that is a prefix of a stored one, or extends one, is another key.
    expect(keys.get("k/1")).toBeUndefined();
    expect(keys.get(`${[...model.keys()][0]!}!`)).toBeUndefined();
  });

  it("tells apart keys whose hashes are equal", () => {
    // FNV-1a over the key's bytes, as the map hashes them from this start: two ASCII keys with the same 32-bit hash
    // (found by trying `p/jobs/<n>` from 0 up).
    const fnv = (k: string) => {
      let h = 0x811c9dc5;
      for (let i = 0; i < k.length; i++) h = Math.imul(h ^ k.charCodeAt(i), 0x01000193);
      return h >>> 0;
    };
    const pair = ["p/jobs/462789", "p/jobs/679192"] as const;
    expect(fnv(pair[0])).toBe(fnv(pair[1]));
    // From the start the pair was found for (the map's hash starts at random otherwise).
    const keys = new ChangedKeys<number>(0x811c9dc5);
    keys.set(pair[0], 1).set(pair[1], 2);
    expect(keys.size).toBe(2);
    expect(keys.get(pair[0])).toBe(1);
    expect(keys.get(pair[1])).toBe(2);
  });

  it("keeps a replaced key in its first place and keeps the last value", () => {
    const keys = new ChangedKeys<string>();
    keys.set("b", "1").set("a", "2").set("b", "3");
    expect([...keys]).toEqual([
      ["b", "3"],
      ["a", "2"],
    ]);
    expect(keys.size).toBe(2);
  });

  it("compares entries in compareKeys order, surrogate pairs and U+E000 to U+FFFF included", () => {
    const keys = new ChangedKeys<null>();
    const list = ["", "a", "ab", "a/", "é", "\ue000", "\uffff", "\u{10000}", "\u{1f600}", "z", "\u{1f600}a"];
    for (const k of list) keys.set(k, null);
    for (let a = 0; a < list.length; a++)
      for (let b = 0; b < list.length; b++) expect(Math.sign(keys.compare(a, b))).toBe(Math.sign(compareKeys(list[a]!, list[b]!)));
  });
});

describe("ChangedKeys against keys chosen to collide", () => {
  it("keeps its probes short for thousands of keys that share one hash from a fixed start", () => {
    const keys = collidingKeys(12, "k/");
    expect(new Set(keys).size).toBe(4096);
    expect(new Set(keys.map((k) => fnvFrom(FNV_START, k))).size, "the keys collide from the fixed start").toBe(1);
    const map = new ChangedKeys<number>();
    for (const [i, k] of keys.entries()) map.set(k, i);
    expect(map.size).toBe(4096);
    for (const [i, k] of keys.entries()) expect(map.get(k)).toBe(i);
    // From a fixed start every insert would walk past all the keys before it (8 million probes in all).
    expect(map.longestProbe).toBeLessThan(100);
  });

  // 300 maps of 4,096 keys: about 6 s of CPU on a quiet core, so given the heavy tests' bound.
  it("keeps keys that collide from one start apart from every other start, however the start's low bits fall", { timeout: HEAVY_TEST_MS }, () => {
    // FNV-1a's collisions from one start held from every start with the same low 7 bits (one map in 128).
    const r = testRandom("changed keys from many starts");
    const fixed = 0x811c9dc5;
    const keys = collidingKeys(12, "k/", hashFrom, fixed, 7);
    expect(new Set(keys.map((k) => hashFrom(fixed, k))).size, "the keys collide under the map's hash from the fixed start").toBe(1);
    const pinned = new ChangedKeys<number>(fixed);
    for (const [i, k] of keys.entries()) pinned.set(k, i);
    expect(pinned.longestProbe, "the crafted keys crowd one chain from the start they were made for").toBeGreaterThan(4000);
    // Starts that share the fixed start's low 7 bits, then any.
    const sameLowBits = Array.from({ length: 128 }, () => ((r.int(2 ** 25) << 7) | (fixed & 0x7f)) >>> 0);
    const starts = [...sameLowBits, ...Array.from({ length: 172 }, () => r.int(2 ** 32))];
    for (const [n, start] of starts.entries()) {
      if (start === fixed) continue;
      const map = new ChangedKeys<number>(start);
      for (const [i, k] of keys.entries()) map.set(k, i);
      expect(map.longestProbe, `start ${n} (${start})`).toBeLessThan(100);
    }
  });
});

describe("ChangedKeys retired into spares", () => {
  /** Fills `keys` and a model with `n` keys of `prefix`, some replaced and some deleted (null). */
  function fill(keys: ChangedKeys<number | null>, model: Map<string, number | null>, prefix: string, n: number): void {
    for (let i = 0; i < n; i++) {
      const key = `${prefix}/${(i * 7) % Math.ceil(n * 0.8)}${"é".repeat(i % 3)}`;
      const value = i % 9 === 0 ? null : i;
      keys.set(key, value);
      model.set(key, value);
    }
  }

  it("hands its arrays to the next map, which holds only its own keys, in its own order", () => {
    const spares = new ChangedKeysSpares();
    const taken = ChangedKeysSpares.taken;
    const first = new ChangedKeys<number | null>();
    fill(first, new Map(), "old", 6_000);
    const firstKeys = [...first.keys()];
    first.retire(spares);
    // Sized for fewer keys than the spares hold: the next map takes them whole.
    const next = new ChangedKeys<number | null>(undefined, { keys: 100, keyBytes: 1_000 }, spares);
    expect(ChangedKeysSpares.taken).toBe(taken + 1);
    const model = new Map<string, number | null>();
    fill(next, model, "new", 4_000);
    expect(next.size).toBe(model.size);
    expect([...next.entries()]).toEqual([...model.entries()]);
    for (const [k, v] of model) expect(next.get(k)).toBe(v);
    // The last map's keys left nothing behind in the table or the key bytes.
    for (const k of firstKeys) expect(next.get(k)).toBeUndefined();
    // One set is kept at a time: taken once, then gone.
    expect(new ChangedKeys<number | null>(undefined, undefined, spares)).toBeDefined();
    expect(ChangedKeysSpares.taken).toBe(taken + 1);
  });

  it("the next map finds none of the last map's keys even with the same hash start and the same keys", () => {
    const spares = new ChangedKeysSpares();
    const first = new ChangedKeys<number | null>(FNV_START);
    fill(first, new Map(), "same", 3_000);
    first.retire(spares);
    const next = new ChangedKeys<number | null>(FNV_START, undefined, spares);
    const model = new Map<string, number | null>();
    fill(next, model, "same", 3_000);
    expect(next.size).toBe(model.size);
    expect([...next.entries()]).toEqual([...model.entries()]);
  });

  it("a map larger than the spares allocates what they lack and still matches a model", () => {
    const spares = new ChangedKeysSpares();
    const small = new ChangedKeys<number | null>();
    fill(small, new Map(), "s", 100);
    small.retire(spares);
    const big = new ChangedKeys<number | null>(undefined, { keys: 50_000, keyBytes: 1_000_000 }, spares);
    const model = new Map<string, number | null>();
    fill(big, model, "b", 60_000);
    expect([...big.entries()]).toEqual([...model.entries()]);
    for (const [k, v] of model) expect(big.get(k)).toBe(v);
  });

  it("a retired map throws on every use, also in an iteration it was retired during", () => {
    const spares = new ChangedKeysSpares();
    const keys = new ChangedKeys<number | null>();
    fill(keys, new Map(), "k", 100);
    const walking = keys.entriesWhere(() => true);
    walking.next();
    const sorting = keys.entries();
    sorting.next();
    keys.retire(spares);
    expect(() => walking.next()).toThrow(/retired/);
    expect(() => sorting.next()).toThrow(/retired/);
    expect(() => keys.set("k/1", 1)).toThrow(/retired/);
    expect(() => keys.get("k/1")).toThrow(/retired/);
    expect(() => keys.keyAt(0)).toThrow(/retired/);
    expect(() => keys.valueAt(0)).toThrow(/retired/);
    expect(() => keys.compare(0, 1)).toThrow(/retired/);
    expect(() => [...keys.keys()]).toThrow(/retired/);
    expect(() => keys.retire(spares)).toThrow(/retired/);
  });
});
