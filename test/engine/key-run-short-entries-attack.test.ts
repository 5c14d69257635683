/**
 * @module Attacks on a key run's one-byte entries (a key as long as the one
 * before whose value repeats the previous entry's) and on a run rewritten
 * alone, whose copies are found by rank. Each case is laid out so that a
 * header, a repeated value or a rank lands where an off-by-one would show:
 * a block's first entry, the entry right after a block boundary, suffixes
 * and shared lengths at the header's limits, values at the staging limit,
 * tags that encode the same number, entries whose value lives in a dead
 * neighbour. Every read is compared with the list the run was built from.
 */
import { describe, expect, it } from "vitest";
import { BLOCK_ENTRIES, KeyBytes, type KeyRun, KeyRunBuilder, RunCursor, RunReverseCursor } from "../../runtime/engine/key-run.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { type Layer, layerOf, RunMerge } from "../../runtime/engine/run-merge.js";
import { RunLiveness } from "../../runtime/engine/run-liveness.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom } from "../support/seed.js";

type Entry = [string, StoredValue];

/** A value as a run gives it back: page references and key tails as numbers, bytes as a list. */
function norm(v: StoredValue | undefined): number | number[] | undefined {
  if (v === undefined || typeof v === "number") return v;
  if (typeof v === "string") return [...Buffer.from(v, "latin1")];
  return [...(v as Uint8Array)];
}

function build(list: Entry[]): KeyRun {
  const b = new KeyRunBuilder();
  for (const [k, v] of list) b.add(k, v);
  return b.finish();
}

/** The live entries a forward cursor walks, with their values. */
function walk(run: KeyRun, live: RunLiveness): [string, number | number[] | undefined][] {
  const c = new RunCursor(run, live);
  const out: [string, number | number[] | undefined][] = [];
  while (c.advance()) out.push([c.keyString(), norm(run.value(c.valueAt))]);
  return out;
}

/** Checks lookups, both cursors and a seek to every key against `list`, with the entries at `dead` killed. */
function expectReads(run: KeyRun, list: Entry[], dead: readonly number[] = []): void {
  expect(run.count).toBe(list.length);
  const kb = new KeyBytes();
  const found = { valueAt: 0 };
  for (const [i, [k, v]] of list.entries()) {
    expect(run.find(k, kb.set(k), found), k).toBe(i);
    expect(norm(run.value(found.valueAt)), k).toEqual(norm(v));
  }
  const live = new RunLiveness(run.count, BLOCK_ENTRIES);
  for (const i of dead) live.kill(i, Math.floor(i / BLOCK_ENTRIES));
  const want = list.filter((_, i) => !dead.includes(i)).map(([k, v]) => [k, norm(v)]);
  expect(walk(run, live)).toEqual(want);
  const rc = new RunReverseCursor(run, live);
  rc.seek(undefined);
  const back: [string, number | number[] | undefined][] = [];
  for (; rc.key !== undefined; rc.next()) back.push([rc.key, norm(rc.value())]);
  expect(back).toEqual([...want].reverse());
  // A seek lands in the middle of a block: the value must come from the entry it lands on, not the block's first.
  for (const [k] of list) {
    const c = new RunCursor(run, live);
    const at = want.findIndex(([w]) => compareKeys(w as string, k) >= 0);
    expect(c.seek(k, new KeyBytes()), k).toBe(at >= 0);
    if (at >= 0) expect([c.keyString(), norm(run.value(c.valueAt))], k).toEqual(want[at]);
  }
}

/** `n` keys of one length differing only in their last byte or two (`prefix` + a 2-character counter). */
function lastByteKeys(prefix: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(prefix + String.fromCharCode(0x30 + Math.floor(i / 64), 0x30 + (i % 64)));
  return out;
}

describe("key-run one-byte entries (attack)", () => {
  it("keys of one length with one value: a short header each, the value written again at every block's first entry", () => {
    const keys = lastByteKeys("p/jobs/0005/01M92CFMXPEHEBCD", BLOCK_ENTRIES * 4 + 3);
    const list: Entry[] = keys.map((k) => [k, 41]);
    const run = build(list);
    expectReads(run, list);
    // Past each block's first entry, an entry is a header and one byte of suffix (the counter's tail differs), mostly.
    expect(run.bytes.length).toBeLessThan(list.length * 2 + run.blocks * (keys[0]!.length + 6));
    // Kill each block's first entry (the one that holds the value the rest repeat): the others still read it.
    const firsts = Array.from({ length: run.blocks }, (_, b) => b * BLOCK_ENTRIES);
    expectReads(run, list, firsts);
    // Kill every entry but one past a boundary: it still reads its own value.
    expectReads(
      run,
      list,
      list.map((_, i) => i).filter((i) => i !== BLOCK_ENTRIES + 1),
    );
  });

  it("a value that repeats across a block boundary is read right on both sides, and a new value right after the boundary", () => {
    const keys = lastByteKeys("j/", BLOCK_ENTRIES * 3);
    const list: Entry[] = keys.map((k, i) => {
      // Same value up to and past the first boundary; a change exactly at the second; empty values around the end.
      if (i < BLOCK_ENTRIES + 5) return [k, 7];
      if (i < 2 * BLOCK_ENTRIES) return [k, -2];
      if (i === 2 * BLOCK_ENTRIES) return [k, 8];
      return [k, i % 3 === 0 ? "" : new Uint8Array(0)];
    });
    expectReads(build(list), list);
    expectReads(build(list), list, [BLOCK_ENTRIES - 1, BLOCK_ENTRIES, 2 * BLOCK_ENTRIES - 1]);
  });

  it("suffixes and shared lengths at the header's limits, keys of one length and not", () => {
    const list: Entry[] = [];
    // Keys of one length whose suffix past the shared prefix is 62, 63, 64 and 65 bytes: the short header holds up to 63.
    for (const suffix of [62, 63, 64, 65]) {
      const base = `s${String(suffix).padStart(3, "0")}/`;
      list.push([`${base}${"a".repeat(suffix)}`, 3], [`${base}${"b".repeat(suffix)}`, 3], [`${base}${"c".repeat(suffix)}`, 4]);
    }
    // Shared prefixes of 62, 63, 64 and 300 bytes: a long header holds up to 62 itself, a varint past it.
    for (const shared of [62, 63, 64, 300]) {
      const prefix = `t${String(shared).padStart(3, "0")}`.padEnd(shared, "x");
      list.push([`${prefix}a`, 5], [`${prefix}b`, 5], [`${prefix}bb`, 5], [`${prefix}c`, 5], [`${prefix}cé`, 6]);
    }
    list.sort((a, b) => compareKeys(a[0], b[0]));
    const run = build(list);
    expectReads(run, list);
    expectReads(
      run,
      list,
      list.map((_, i) => i).filter((i) => i % 2 === 0),
    );
  });

  it("values that encode alike only in part are written again: a page and a tail of one number, bytes at the staging limit, varints of 1 to 5 bytes", () => {
    const values: StoredValue[] = [
      3,
      -3,
      3,
      -3,
      0x7f,
      0x80,
      0x80,
      0x3fff,
      0x4000,
      0xffffffff,
      0xffffffff,
      -0xffffffff,
      -0xffffffff,
      Uint8Array.from({ length: 22 }, (_, i) => i),
      Uint8Array.from({ length: 22 }, (_, i) => i),
      Uint8Array.from({ length: 22 }, (_, i) => (i === 21 ? 99 : i)),
      Uint8Array.from({ length: 23 }, (_, i) => i),
      Uint8Array.from({ length: 23 }, (_, i) => i),
      "\u00ff".repeat(22),
      new Uint8Array(22).fill(0xff),
      new Uint8Array(0),
      "",
      new Uint8Array(1025).fill(1),
      new Uint8Array(1025).fill(1),
      new Uint8Array(1024).fill(2),
      new Uint8Array(1024).fill(2),
      Uint8Array.of(1),
      1,
      Uint8Array.of(1),
    ];
    const keys = lastByteKeys("v/", values.length);
    const list: Entry[] = keys.map((k, i) => [k, values[i]!]);
    const run = build(list);
    expectReads(run, list);
    // A merge's copy entry by entry reads the same, with every other entry left out and with none.
    for (const step of [1, 2, 3]) {
      const live = new RunLiveness(run.count, BLOCK_ENTRIES);
      const kept: Entry[] = [];
      for (const [i, e] of list.entries()) {
        if (i % step === 1) live.kill(i, Math.floor(i / BLOCK_ENTRIES));
        else kept.push(e);
      }
      const b = new KeyRunBuilder();
      const c = new RunCursor(run, live);
      while (c.advance()) b.addFrom(run, c.keyBuf, c.keyLen, c.valueAt);
      expectReads(b.finish(), kept);
    }
  });

  it("a key tail of -0 is page 0, and NaN, infinite, fractional and huge tails and pages are refused without a trace in the run", () => {
    const b = new KeyRunBuilder();
    b.add("k/a", -0);
    for (const bad of [Number.NaN, Number.NEGATIVE_INFINITY, -1e30, -(2 ** 32), -0.5]) expect(() => b.add("k/b", bad)).toThrow(/key tail length/);
    for (const bad of [Number.POSITIVE_INFINITY, 1e30, 2 ** 32, 0.5, Number.MAX_SAFE_INTEGER + 2])
      expect(() => b.add("k/b", bad)).toThrow(/does not fit 32 bits/);
    // The refused values left nothing staged: the next entry repeats the first entry's value, not a refused one.
    b.add("k/b", 0);
    b.add("k/c", -1);
    const run = b.finish();
    expect(Object.is(norm(run.value(valueAtOf(run, "k/a"))), 0)).toBe(true);
    expectReads(run, [
      ["k/a", 0],
      ["k/b", 0],
      ["k/c", -1],
    ]);
  });

  it("entries added through every builder path, in any mix, read back as added, whatever their neighbours repeat", () => {
    const r = testRandom("key-run short entries mix");
    for (let round = 0; round < 12; round++) {
      const n = 1 + r.int(400);
      const keys = [...new Set(Array.from({ length: n * 2 }, () => `q/${r.int(4)}/${String(r.int(50_000)).padStart(6, "0")}${r.random() < 0.1 ? "é" : ""}`))]
        .sort(compareKeys)
        .slice(0, n);
      const b = new KeyRunBuilder();
      const list: Entry[] = [];
      let prev: Buffer | undefined;
      let page = r.int(3);
      for (const k of keys) {
        const kb = Buffer.from(k, "utf8");
        let shared = -1;
        if (prev !== undefined && r.random() < 0.5) {
          shared = 0;
          while (shared < prev.length && shared < kb.length && prev[shared] === kb[shared]) shared++;
        }
        if (r.random() < 0.2) page = r.int(3);
        const kind = r.int(6);
        if (kind === 0) {
          b.addPagedBytes(kb, 0, kb.length, page, shared);
          list.push([k, page]);
        } else if (kind === 1 && kb[kb.length - 1]! < 0x80) {
          // The last byte or two of the key, ASCII: a key tail.
          const tail = kb[kb.length - 2]! < 0x80 ? 1 + r.int(2) : 1;
          b.addKeyTailBytes(kb, 0, kb.length, tail, shared);
          list.push([k, -tail]);
        } else if (kind === 2 && kb[kb.length - 1]! < 0x80) {
          // Held bytes that repeat the key's last byte: packed, a key tail; not packed, the bytes.
          const packed = r.random() < 0.5;
          b.addHeldBytes(kb, 0, kb.length, kb, kb.length - 1, 1, packed, shared);
          list.push([k, packed ? -1 : kb.subarray(kb.length - 1)]);
        } else if (kind === 3) {
          const v = Buffer.from([r.int(2), r.int(2)].slice(0, r.int(3)));
          b.addHeldBytes(kb, 0, kb.length, v, 0, v.length, r.random() < 0.5, shared);
          list.push([k, v.length === 0 ? new Uint8Array(0) : v]);
        } else if (kind === 4) {
          const v = Buffer.alloc(1000 + r.int(100), r.int(2));
          b.addHeldBytes(kb, 0, kb.length, v, 0, v.length, false, shared);
          list.push([k, v]);
        } else {
          const v: StoredValue = r.random() < 0.5 ? page : -1;
          b.add(k, v);
          list.push([k, v]);
        }
        prev = kb;
      }
      const run = b.finish();
      const dead = list.map((_, i) => i).filter(() => r.random() < 0.3);
      expectReads(run, list, dead);
    }
  });

  it("a rollback to a block boundary: the next entry, a block's first, writes its value even when it equals the one taken back", () => {
    const b = new KeyRunBuilder();
    const keys = lastByteKeys("m/", BLOCK_ENTRIES + 4);
    for (const k of keys.slice(0, BLOCK_ENTRIES)) b.add(k, 9);
    const mark = b.mark();
    b.add(keys[BLOCK_ENTRIES]!, 9);
    b.add(keys[BLOCK_ENTRIES + 1]!, 9);
    b.rollback(mark);
    for (const k of keys.slice(BLOCK_ENTRIES)) b.add(k, 9);
    expectReads(
      b.finish(),
      keys.map((k) => [k, 9]),
    );
  });
});

function valueAtOf(run: KeyRun, key: string): number {
  const found = { valueAt: 0 };
  expect(run.find(key, new KeyBytes().set(key), found)).toBeGreaterThanOrEqual(0);
  return found.valueAt;
}

/** A run of `n` sequential keys sharing values in stretches, as a queue's pending entries do. */
function pendingRun(n: number): { layer: Layer; keys: string[] } {
  const keys = lastByteKeys("p/q/0/", n);
  const b = new KeyRunBuilder();
  for (const [i, k] of keys.entries()) b.add(k, Math.floor(i / 10));
  return { layer: layerOf(b.finish()), keys };
}

function liveKeys(l: Layer | undefined): string[] {
  if (l === undefined) return [];
  const c = new RunCursor(l.run, l.live);
  const out: string[] = [];
  while (c.advance()) out.push(c.keyString());
  return out;
}

/** Kills entry `i` of a merge's only input, as the state does when a write finds it live. */
function kill(layer: Layer, merge: RunMerge | undefined, i: number): void {
  if (!layer.live.kill(i, Math.floor(i / BLOCK_ENTRIES))) return;
  merge?.killed(0, i);
}

describe("a run rewritten alone (attack)", () => {
  const n = BLOCK_ENTRIES * 5 + 7;
  const edges = [0, 1, BLOCK_ENTRIES - 1, BLOCK_ENTRIES, BLOCK_ENTRIES + 1, 2 * BLOCK_ENTRIES, 4 * BLOCK_ENTRIES - 1, n - 2, n - 1];

  for (const budget of [1, 2, BLOCK_ENTRIES - 1, BLOCK_ENTRIES, BLOCK_ENTRIES + 1, 1000]) {
    it(`keeps exactly the live entries when the first, last and boundary entries die before, during and after their copy (slices of ${budget})`, () => {
      for (const when of ["before", "during", "after"] as const) {
        const { layer, keys } = pendingRun(n);
        // A whole block dead before the merge: the cursor skips it, and the rank's counts must too.
        for (let i = 2 * BLOCK_ENTRIES; i < 3 * BLOCK_ENTRIES; i++) kill(layer, undefined, i);
        if (when === "before") for (const i of edges) kill(layer, undefined, i);
        const merge = new RunMerge([layer]);
        let steps = 0;
        while (merge.step(budget)) {
          steps++;
          // Kill each edge once the merge is past it, and again (a second death of one entry changes nothing).
          if (when === "during") for (const i of edges) if (steps * budget > i) kill(layer, merge, i);
          if (when === "during" && steps % 2 === 0) for (const i of edges) if (layer.live.isDead(i)) merge.killed(0, i);
        }
        if (when === "after") for (const i of edges) kill(layer, merge, i);
        const want = keys.filter((_, i) => !layer.live.isDead(i));
        expect(liveKeys(merge.finish()), when).toEqual(want);
      }
    });
  }

  it("a run whose entries all die, before the merge, during it or after their copies, leaves no output", () => {
    for (const when of ["before", "during", "after"] as const) {
      const { layer } = pendingRun(n);
      if (when === "before") for (let i = 0; i < n - 1; i++) kill(layer, undefined, i);
      const merge = new RunMerge([layer]);
      let next = 0;
      while (merge.step(7)) if (when === "during") kill(layer, merge, next++);
      for (let i = 0; i < n; i++) kill(layer, merge, i);
      expect(merge.finish(), when).toBeUndefined();
    }
  });

  it("an entry killed twice over the merge's own call leaves every other entry in the output", () => {
    const { layer, keys } = pendingRun(n);
    const merge = new RunMerge([layer]);
    merge.step(Infinity);
    kill(layer, merge, 5);
    // The engine calls `killed` once per death; a second call for the same entry must not count it twice.
    merge.killed(0, 5);
    for (let i = 0; i < n; i++) if (i !== 5 && i !== 6) kill(layer, merge, i);
    expect(liveKeys(merge.finish())).toEqual([keys[6]]);
  });
});
