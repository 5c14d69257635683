/**
 * @module The memtable's tree keeps `compareKeys` order (code point order)
 * while it takes the built-in comparison and after it switches, for keys
 * with astral characters, U+E000..U+FFFF and lone surrogates among ASCII
 * ones, in any insertion order, and built whole from sorted entries; and
 * the built-in comparison agrees with that order whenever one side has
 * only code units below U+D800. An engine whose memtable takes such
 * keys after ASCII ones scans them in UTF-8 byte order, also after a
 * checkpoint and a reopen.
 */
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { describe, expect, it } from "vitest";
import { Memtable } from "../../runtime/engine/memtable.js";
import { compareKeys, unitsBelowSurrogates } from "../../runtime/store/keys.js";
import { keysOf, nextHigherKey } from "../support/ordered-map-keys.js";
import { firstDifference } from "../support/first-difference.js";
import { testRandom, type TestRandom } from "../support/seed.js";

/**
 * The stored order, written independently of `compareKeys`: UTF-16 code units weighted so that
 * surrogates (pairs for code points past U+FFFF, or lone) sort after every other unit, then compared
 * as plain number lists. That is code point order for well-formed keys.
 */
function reference(a: string, b: string): number {
  const weights = (s: string) =>
    Array.from({ length: s.length }, (_, i) => s.charCodeAt(i) + (s.charCodeAt(i) >= 0xd800 && s.charCodeAt(i) <= 0xdfff ? 0x10000 : 0));
  const wa = weights(a);
  const wb = weights(b);
  const at = wa.findIndex((w, i) => i >= wb.length || w !== wb[i]);
  if (at === -1) return Math.sign(wa.length - wb.length);
  if (at >= wb.length) return 1;
  return Math.sign(wa[at]! - wb[at]!);
}

/** Mostly ASCII queue-like keys sharing long prefixes, some with the characters where UTF-16 and code point order disagree. */
const UNITS = [
  "a",
  "b",
  "/",
  "0",
  "Z",
  "~",
  "\u00e9",
  "\u07ff",
  "\ud7ff",
  "\ue000",
  "\uf8ff",
  "\uffff",
  "\ud83d\ude00",
  "\u{10000}",
  "\u{10ffff}",
  "\ud800",
  "\udfff",
  "\udc00",
];

function randomKey(r: TestRandom, plainOnly: boolean): string {
  const prefix = ["", "j/01M8TVYTZPV71T97", "u/workflow/history/workflow-steps/01M8TVYK6X", "c/workflow-steps/"][r.int(4)]!;
  let s = prefix;
  const n = r.int(6);
  for (let i = 0; i < n; i++) s += plainOnly ? UNITS[r.int(8)]! : UNITS[r.int(UNITS.length)]!;
  return s;
}

describe("Memtable", () => {
  it("iterates and finds keys in code point order, whatever keys it was given and in what order", () => {
    const r = testRandom("memtable order");
    for (let round = 0; round < 100; round++) {
      const table = new Memtable<number>();
      const model = new Map<string, number>();
      // Some rounds stay plain for a while, then take the keys that switch the order.
      const plainFor = r.int(3) === 0 ? 1000 : r.int(60);
      // What disagrees with the model, asserted once a round (40,000 expect calls took over 30 s under load).
      const wrong: string[] = [];
      const check = (what: string, got: unknown, want: unknown) => {
        if (!Object.is(got, want)) wrong.push(`round ${round}, ${what}: got ${String(got)}, want ${String(want)}`);
      };
      for (let i = 0; i < 80; i++) {
        const key = randomKey(r, i < plainFor);
        if (r.int(5) === 0) {
          check(`delete ${JSON.stringify(key)}`, table.delete(key), model.delete(key));
        } else {
          check(`set ${JSON.stringify(key)}`, table.set(key, i), !model.has(key));
          model.set(key, i);
        }
        check("size", table.size, model.size);
      }
      const tree = table.tree;
      const expected = [...model.keys()].sort(reference);
      expect(firstDifference(keysOf(tree), expected)).toBeUndefined();
      expect(
        firstDifference(
          tree.entries(),
          expected.map((k) => [k, model.get(k)]),
        ),
      ).toBeUndefined();
      for (let i = 0; i < 40; i++) {
        const probe = randomKey(r, false);
        check(`table get ${JSON.stringify(probe)}`, table.get(probe), model.get(probe));
        check(`tree get ${JSON.stringify(probe)}`, tree.get(probe), model.get(probe));
        const above = expected.find((k) => reference(k, probe) >= 0);
        check(
          `next above ${JSON.stringify(probe)}`,
          nextHigherKey(tree, probe),
          expected.find((k) => reference(k, probe) > 0),
        );
        check(`entries from ${JSON.stringify(probe)}`, tree.entries(probe).next().value?.[0], above);
      }
      expect(wrong).toEqual([]);
    }
  });

  it("switches from the built-in order where it would be wrong: an astral character after U+E000..U+FFFF", () => {
    const table = new Memtable<number>();
    for (const [i, key] of ["k/a", "k/\uffff", "k/\u{1f600}", "k/\ue000", "k/z"].entries()) table.set(key, i);
    expect(keysOf(table.tree)).toEqual(["k/a", "k/z", "k/\ue000", "k/\uffff", "k/\u{1f600}"]);
    // A snapshot taken before the switch keeps its entries; the table goes on in the new order.
    const plain = new Memtable<number>();
    plain.set("k/b", 1);
    const before = plain.tree.clone();
    plain.set("k/\u{1f600}", 2);
    plain.set("k/\uffff", 3);
    plain.set("k/b", 4);
    expect([...before.entries()]).toEqual([["k/b", 1]]);
    expect([...plain.tree.entries()]).toEqual([
      ["k/b", 4],
      ["k/\uffff", 3],
      ["k/\u{1f600}", 2],
    ]);
  });
});

describe("Memtable.replace", () => {
  it("sets the value of a key it holds, leaves every other entry and a clone taken before as they were", () => {
    for (const astral of [false, true]) {
      const t = new Memtable<number>();
      const keys = Array.from({ length: 500 }, (_, i) => `k/${String(i).padStart(4, "0")}${astral && i === 7 ? "\u{1f600}" : ""}`);
      for (const [i, k] of keys.entries()) t.set(k, i);
      const before = t.tree.clone();
      // An equal string made again, as a checkpoint decodes its keys.
      for (let i = 0; i < keys.length; i += 3) t.replace(Buffer.from(keys[i]!).toString(), -i);
      expect(t.size).toBe(keys.length);
      for (const [i, k] of keys.entries()) expect(t.get(k)).toBe(i % 3 === 0 ? -i : i);
      expect(keysOf(t.tree)).toEqual([...keys].sort(compareKeys));
      for (const [i, k] of keys.entries()) expect(before.get(k)).toBe(i);
    }
  });
});

describe("Memtable.fromSorted", () => {
  it("holds the entries it was built from, in order (packed while in the built-in order), and takes further keys in code point order", () => {
    const r = testRandom("memtable from sorted");
    for (let round = 0; round < 60; round++) {
      const model = new Map<string, number>();
      const plainOnly = r.int(2) === 0;
      for (let i = 0; i < r.int(40); i++) model.set(randomKey(r, plainOnly), i);
      const keys = [...model.keys()].sort(reference);
      const table = Memtable.fromSorted(
        keys,
        keys.map((k) => model.get(k)!),
      );
      expect(table.size).toBe(model.size);
      // Built in the built-in order (a freeze's held table of queue keys), its leaves hold their keys
      // packed until written; the writes below then switch the order of half of them.
      const plainKeys = keys.every(unitsBelowSurrogates);
      expect(table.tree.packedLeafCount()).toBe(plainKeys && keys.length > 0 ? table.tree.leafCount() : 0);
      for (let i = 0; i < 40; i++) {
        const key = randomKey(r, r.int(2) === 0);
        if (r.int(4) === 0) expect(table.delete(key)).toBe(model.delete(key));
        else {
          expect(table.get(key)).toBe(model.get(key));
          expect(table.set(key, 100 + i)).toBe(!model.has(key));
          model.set(key, 100 + i);
        }
      }
      const expected = [...model.keys()].sort(reference);
      expect([...table.tree.entries()]).toEqual(expected.map((k) => [k, model.get(k)]));
      for (const k of expected) expect(table.get(k)).toBe(model.get(k));
    }
  });
});

describe("an engine whose memtable takes keys above U+D800 after ASCII ones", () => {
  it("scans in UTF-8 byte order before and after a checkpoint and a reopen, and refuses a lone surrogate", async () => {
    const store = new MemoryStore();
    const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0 };
    const engine = await Engine.open(store, opts);
    const ascii = ["k/a", "k/z", "k/m/1", "j/01M8TVYTZPV71T97"];
    const high = ["k/\ue000", "k/\u{1f600}", "k/\uffff", "k/\u{10000}a", "k/\u00e9"];
    for (const k of ascii) await engine.commit(new WriteBatch().put(k, new Uint8Array([1])));
    for (const k of high) await engine.commit(new WriteBatch().put(k, new Uint8Array([2])));
    const byBytes = [...ascii, ...high].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const keys = (e: Engine) => [...e.scan()].map(([k]) => k);
    expect(keys(engine)).toEqual(byBytes);
    expect(engine.get("k/\ud83d")).toBeUndefined();
    await expect(engine.commit(new WriteBatch().put("k/\ud83d", new Uint8Array([3])))).rejects.toMatchObject({
      issues: [expect.stringContaining("lone surrogate")],
    });
    expect(keys(engine)).toEqual(byBytes);
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("k/\ue001", new Uint8Array([4])).delete("k/\u{1f600}"));
    const expected = [...byBytes.filter((k) => k !== "k/\u{1f600}"), "k/\ue001"].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(keys(engine)).toEqual(expected);
    await engine.close();
    const reopened = await Engine.open(store, opts);
    expect(keys(reopened)).toEqual(expected);
    expect(reopened.get("k/\ue001")).toEqual(new Uint8Array([4]));
    await reopened.close();
  });
});

describe("unitsBelowSurrogates", () => {
  it("marks the strings against which the built-in comparison is compareKeys order", () => {
    const r = testRandom("units below surrogates");
    for (let i = 0; i < 5000; i++) {
      const a = randomKey(r, r.int(2) === 0);
      const b = randomKey(r, false);
      expect(Math.sign(compareKeys(a, b))).toBe(reference(a, b));
      if (unitsBelowSurrogates(a) || unitsBelowSurrogates(b)) {
        expect(a === b ? 0 : a < b ? -1 : 1).toBe(reference(a, b));
      }
    }
    expect(unitsBelowSurrogates("j/01M8TVYTZPV71T97\u00e9\ud7ff")).toBe(true);
    for (const unit of ["\ud800", "\udfff", "\ue000", "\uffff", "\u{1f600}"]) expect(unitsBelowSurrogates(`j/${unit}`)).toBe(false);
  });
});
