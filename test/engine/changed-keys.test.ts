/**
 * The checkpoint's changed keys (changed-keys.ts): a hash map over key bytes
 * must behave as a `Map` of strings for every operation the engine uses, and
 * order keys as `compareKeys` does.
 */
import { describe, expect, it } from "vitest";
import { ChangedKeys } from "../../runtime/engine/changed-keys.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { collidingKeys, FNV_START, fnvFrom } from "../support/colliding-keys.js";

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
});
