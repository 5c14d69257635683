/**
 * @module A key run's entries read back as they were added, whatever their
 * keys share and however their values repeat: an entry whose key is as long
 * as the one before takes a one-byte header, and one whose value repeats the
 * one before (the same page reference, key tail or bytes) does not write it
 * again. Lookups, both cursors, seeks, copies into another run and a
 * builder's rollback all see every entry's own key and value.
 */
import { describe, expect, it } from "vitest";
import { BLOCK_ENTRIES, KeyBytes, type KeyRun, KeyRunBuilder, RunCursor, RunReverseCursor } from "../../runtime/engine/key-run.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { RunLiveness } from "../../runtime/engine/run-liveness.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { type TestRandom, testRandom } from "../support/seed.js";

/** A value as a run gives it back: held bytes as bytes, page references and key tails as numbers. */
function normalize(v: StoredValue): number | number[] {
  if (typeof v === "number") return v;
  if (typeof v === "string") return [...Buffer.from(v, "latin1")];
  return [...(v as Uint8Array)];
}

const PIECES = ["a", "z", "0", "é", "日本", "😀", "\u0000", "~", "ab", "ﬀ"];

/** Sorted distinct keys that share prefixes of every length (0 to past 200 bytes), some non-ASCII, with values that often repeat the one before. */
function entries(r: TestRandom, n: number): [string, StoredValue][] {
  const bases = ["", "j/", "p/jobs/0001/", "x".repeat(70), `ü${"y".repeat(230)}`, "日本語/"];
  const keys = new Set<string>();
  while (keys.size < n) {
    let k = bases[r.int(bases.length)]!;
    const parts = 1 + r.int(r.random() < 0.1 ? 90 : 4);
    for (let i = 0; i < parts; i++) k += PIECES[r.int(PIECES.length)]!;
    keys.add(k);
  }
  const sorted = [...keys].sort(compareKeys);
  const out: [string, StoredValue][] = [];
  let value: StoredValue = 7;
  for (const k of sorted) {
    // Half the entries repeat the value before (as pending jobs' page references and key tails do).
    if (r.random() < 0.5) {
      const kind = r.int(7);
      if (kind === 0) value = r.int(3) + (r.random() < 0.2 ? 300_000 : 0);
      else if (kind === 1) value = -(1 + r.int(3));
      else if (kind === 2) value = new Uint8Array(0);
      else if (kind === 3) value = Uint8Array.from({ length: r.int(40) }, () => r.int(256));
      else if (kind === 4) value = "\u00ff".repeat(r.int(30));
      else if (kind === 5) value = new Uint8Array(1100 + r.int(200)).fill(r.int(256));
      else value = Uint8Array.of(r.int(2));
    }
    out.push([k, value]);
  }
  return out;
}

function build(list: [string, StoredValue][]): KeyRun {
  const b = new KeyRunBuilder();
  for (const [k, v] of list) b.add(k, v);
  return b.finish();
}

/** Checks every read of `run` against `list`. */
function expectReads(run: KeyRun, list: [string, StoredValue][], r: TestRandom): void {
  const live = new RunLiveness(run.count, BLOCK_ENTRIES);
  expect(run.count).toBe(list.length);
  const kb = new KeyBytes();
  const found = { valueAt: 0 };
  for (const [i, [k, v]] of list.entries()) {
    expect(run.find(k, kb.set(k), found), k).toBe(i);
    expect(normalize(run.value(found.valueAt))).toEqual(normalize(v));
    expect(run.findBytes(kb.set(k), found)).toBe(i);
  }
  // Keys between and beside the stored ones are not found.
  for (const [k] of list) {
    for (const absent of [`${k}\u0000`, `${k}!`, k.slice(0, -1)]) {
      if (list.some(([x]) => x === absent)) continue;
      expect(run.find(absent, kb.set(absent), found), absent).toBe(-1);
    }
  }
  const c = new RunCursor(run, live);
  const walked: [string, number | number[]][] = [];
  while (c.advance()) walked.push([c.keyString(), normalize(run.value(c.valueAt))]);
  expect(walked).toEqual(list.map(([k, v]) => [k, normalize(v)]));
  const rc = new RunReverseCursor(run, live);
  rc.seek(undefined);
  const back: string[] = [];
  for (; rc.key !== undefined; rc.next()) back.push(rc.key);
  expect(back).toEqual(list.map(([k]) => k).reverse());
  // Seeks land on the first key at or after the bound.
  for (let s = 0; s < 40; s++) {
    const bound = list[r.int(list.length)]![0] + (r.random() < 0.5 ? "" : "\u0001");
    const seek = new RunCursor(run, live);
    const at = list.findIndex(([k]) => compareKeys(k, bound) >= 0);
    expect(seek.seek(bound, new KeyBytes())).toBe(at >= 0);
    if (at >= 0) {
      expect(seek.keyString()).toBe(list[at]![0]);
      expect(normalize(run.value(seek.valueAt))).toEqual(normalize(list[at]![1]));
    }
  }
}

describe("key-run entries", () => {
  it(
    "read back keys of shared prefixes of every length, non-ASCII keys and repeating, empty and large values, and so do their copies",
    () => {
      const r = testRandom("key-run entries");
      for (let round = 0; round < 6; round++) {
        const list = entries(r, 50 + r.int(900));
        const run = build(list);
        expectReads(run, list, r);
        // A copy entry by entry (what a merge does) reads the same, dead entries left out.
        const live = new RunLiveness(run.count, BLOCK_ENTRIES);
        const kept: [string, StoredValue][] = [];
        for (const [i, e] of list.entries()) {
          if (r.random() < 0.3) live.kill(i, Math.floor(i / BLOCK_ENTRIES));
          else kept.push(e);
        }
        const b = new KeyRunBuilder();
        const c = new RunCursor(run, live);
        while (c.advance()) b.addFrom(run, c.keyBuf, c.keyLen, c.valueAt);
        expectReads(b.finish(), kept, r);
      }
    },
    HEAVY_TEST_MS,
  );

  it("takes two bytes plus the block's first key per entry for sequential keys of one length paged to one run", () => {
    const keys = Array.from({ length: 32 * 100 }, (_, i) => `j/01M92CFMXPEHEBCDJEEMS${i.toString(36).padStart(5, "0")}`);
    const run = build(keys.map((k) => [k, 41]));
    // Each block: its first entry (a header byte, its length, the key, the value's tag and id), then 31 of a header and a byte of suffix, mostly.
    expect(run.bytes.length / keys.length).toBeLessThan(3.5);
    expectReads(
      run,
      keys.map((k) => [k, 41]),
      testRandom("sequential keys"),
    );
  });

  it("after a rollback, an entry whose value equals one taken back writes it again", () => {
    const b = new KeyRunBuilder();
    b.add("k/a", 5);
    const mark = b.mark();
    b.add("k/b", 9);
    b.add("k/c", 9);
    b.rollback(mark);
    b.add("k/d", 9);
    b.add("k/e", 9);
    b.add("k/f", 5);
    expectReads(
      b.finish(),
      [
        ["k/a", 5],
        ["k/d", 9],
        ["k/e", 9],
        ["k/f", 5],
      ],
      testRandom("rollback"),
    );
  });

  it("a page reference or key tail that is no whole number of 32 bits is refused before its key is written, and the key can be added again", () => {
    const b = new KeyRunBuilder();
    b.add("k/a", 3);
    for (const bad of [2 ** 32, 1e30, Number.POSITIVE_INFINITY, 1.5]) expect(() => b.add("k/b", bad)).toThrow(/does not fit 32 bits/);
    for (const bad of [Number.NaN, Number.NEGATIVE_INFINITY, -1e30, -2.5]) expect(() => b.add("k/b", bad)).toThrow(/key tail length/);
    b.add("k/b", 3);
    expectReads(
      b.finish(),
      [
        ["k/a", 3],
        ["k/b", 3],
      ],
      testRandom("refused value"),
    );
  });

  it("a key out of order is refused and leaves the builder as it was", () => {
    const b = new KeyRunBuilder();
    b.add("k/b", 3);
    expect(() => b.add("k/a", 4)).toThrow(/not strictly ascending/);
    b.add("k/c", 4);
    expectReads(
      b.finish(),
      [
        ["k/b", 3],
        ["k/c", 4],
      ],
      testRandom("refused"),
    );
  });
});
