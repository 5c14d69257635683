/**
 * @module Key runs built at open from key sections (recovery.ts, one walk
 * per section): byte for byte the run a builder makes entry by entry, also
 * when a section turns out unusable part way and the builder takes its
 * entries back; the builder's mark and rollback; the carried filter hash;
 * and finding a key by its bytes.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "taquba";
import type { Manifest, SegmentRef } from "../../runtime/engine/manifest.js";
import { KeyBytes, KeyHasher, KeyRunBuilder, type KeyRun } from "../../runtime/engine/key-run.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { hashFrom } from "../../runtime/engine/key-hash.js";
import { isPageable, packValue, type PagePolicy } from "../../runtime/engine/paged-value.js";
import { loadSegments, type StoreContext } from "../../runtime/engine/recovery.js";
import { SegmentBuilder } from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { collidingKeys, FNV_START, fnvFrom } from "../support/colliding-keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const POLICY: PagePolicy = { keyPrefixes: ["j/", "é/"], minBytes: 8 };

afterEach(() => {
  vi.restoreAllMocks();
});

type Entry = [string, Uint8Array | undefined];

/**
 * Keys ASCII and of two to four UTF-8 bytes a character, sharing long
 * prefixes; tombstones, key tails, empty and inline values (at most 64 B),
 * and values held in blocks (over 64 B) only under the paged prefixes, so
 * every section is usable with `POLICY`.
 */
function usableEntries(r: TestRandom, n: number): Entry[] {
  const heads = ["j/", "p/q/5/", "é/", "x/\u{1f600}/", "k", "j/ü/"];
  const keys = new Set<string>();
  while (keys.size < n) keys.add(`${heads[r.int(heads.length)]}${String(r.int(1e6)).padStart(7, "0")}${r.int(4) === 0 ? "ü€" : ""}`);
  return [...keys].sort(compareKeys).map((k): Entry => {
    const form = r.int(6);
    if (form === 0) return [k, undefined];
    if (form === 1) return [k, enc(k.slice(-1 - r.int(6)))];
    const paged = k.startsWith("j/") || k.startsWith("é/");
    const len = form === 2 ? 0 : form === 3 ? r.int(65) : paged ? 65 + r.int(1500) : r.int(65);
    return [k, Uint8Array.from({ length: len }, () => r.int(256))];
  });
}

/** A store holding `entries` as one segment run of `parts` segments with key sections, and its manifest. */
async function storeOf(entries: Entry[], parts: number): Promise<{ ctx: StoreContext; manifest: Manifest }> {
  const store = new MemoryStore();
  const segments: SegmentRef[] = [];
  const per = Math.ceil(entries.length / parts);
  for (let p = 0; p < parts; p++) {
    const part = entries.slice(p * per, (p + 1) * per);
    const b = new SegmentBuilder(1024, 4096, { keySection: true });
    for (const [k, v] of part) b.add(k, v);
    const seg = b.finish();
    const name = `seg/1-${p + 1}`;
    await store.put(name, seg);
    segments.push({ name, bytes: seg.length, entries: part.length, firstKey: part[0]![0], lastKey: part[part.length - 1]![0], run: 1 });
  }
  const manifest: Manifest = { id: 1, epoch: 1, walNext: 1, segments, fences: [], createdAt: 0 };
  return { ctx: { store, prefix: "", retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } }, manifest };
}

/** The run open builds from the store (the one run it adds to its state). */
async function openedRun(ctx: StoreContext, manifest: Manifest, policy: PagePolicy): Promise<KeyRun> {
  const added: KeyRun[] = [];
  const addRun = LayeredState.prototype.addRun;
  vi.spyOn(LayeredState.prototype, "addRun").mockImplementation(function (this: LayeredState, run: KeyRun) {
    added.push(run);
    addRun.call(this, run);
  });
  const state = (await loadSegments(ctx, manifest, undefined, policy))!;
  state.stopIdleMerges();
  expect(added).toHaveLength(1);
  return added[0]!;
}

/** The run a builder makes from `entries` one by one, from strings and values (paged values in run 1). */
function entryByEntry(entries: Entry[], policy: PagePolicy): KeyRun {
  const b = new KeyRunBuilder();
  for (const [k, v] of entries) if (v !== undefined) b.add(k, isPageable(policy, k, v) ? 1 : packValue(k, v));
  return b.finish();
}

function expectSameRun(got: KeyRun, want: KeyRun): void {
  expect(got.count).toBe(want.count);
  expect(Buffer.compare(got.bytes, want.bytes)).toBe(0);
  expect([...got.blockStarts]).toEqual([...want.blockStarts]);
  expect(got.lastKey).toBe(want.lastKey);
  expect(got.ascii).toBe(want.ascii);
  expect(got.refs.map((v) => Buffer.from(v).toString("hex"))).toEqual(want.refs.map((v) => Buffer.from(v).toString("hex")));
}

/** Every key of `entries` with a value is found in `run`, with its value, by its string and by its bytes. */
function expectFindsAll(run: KeyRun, entries: Entry[]): void {
  const kb = new KeyBytes();
  const found = { valueAt: 0 };
  const want = entryByEntry(entries, POLICY);
  const wantFound = { valueAt: 0 };
  for (const [k, v] of entries) {
    if (v === undefined) continue;
    const i = run.find(k, kb.set(k), found);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(run.findBytes(kb.set(k), found)).toBe(i);
    want.find(k, kb.set(k), wantFound);
    expect(run.value(found.valueAt)).toEqual(want.value(wantFound.valueAt));
  }
}

describe("key runs built from key sections", () => {
  it("are byte for byte the run built entry by entry (multi-byte keys, tombstones, key tails, inline and in-block values)", async () => {
    const r = testRandom("run from sections");
    const entries = usableEntries(r, 3000);
    const { ctx, manifest } = await storeOf(entries, 4);
    const run = await openedRun(ctx, manifest, POLICY);
    const want = entryByEntry(entries, POLICY);
    expect(want.ascii).toBe(false);
    expectSameRun(run, want);
    expectFindsAll(run, entries);
  });

  it("are the same when a section turns out unusable part way (its entries taken back, the segment read whole)", async () => {
    const r = testRandom("run from sections, one unusable");
    const entries = usableEntries(r, 3000);
    // Near the end of the third of four segments: a value held in its block that the policy does not page.
    const at = Math.floor(entries.length * 0.7);
    const k = entries[at]![0];
    expect(isPageable(POLICY, k, new Uint8Array(100))).toBe(false);
    entries[at] = [k, Uint8Array.from({ length: 100 }, (_, i) => i)];
    const { ctx, manifest } = await storeOf(entries, 4);
    const run = await openedRun(ctx, manifest, POLICY);
    expectSameRun(run, entryByEntry(entries, POLICY));
    expectFindsAll(run, entries);
  });
});

describe("KeyRunBuilder mark and rollback", () => {
  /** Adds `keys` (ascending) with values of every form the builder stores. */
  function addAll(b: KeyRunBuilder, keys: string[], big: boolean): void {
    keys.forEach((k, i) => {
      const kb = Buffer.from(k, "utf8");
      if (i % 5 === 0) b.addPagedBytes(kb, 0, kb.length, i);
      else if (i % 5 === 1) b.addHeldBytes(kb, 0, kb.length, kb, kb.length - 2, 2, true);
      else if (i % 5 === 2 && big) b.addHeldBytes(kb, 0, kb.length, Buffer.alloc(1500, i), 0, 1500, true);
      else b.add(k, `v${i}`.padEnd(40, "."));
    });
  }
  const keysOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(6, "0")}`);

  for (const [name, taken] of [
    ["a few entries within a block", 3],
    ["blocks of entries, past the growable buffer's first megabyte", 100_000],
  ] as const) {
    it(`takes back ${name}, leaving the run the builder makes without them`, () => {
      const before = keysOf("b/", 50);
      // Taken back: non-ASCII keys and large values (refs), sorting after `before` and before `after`.
      const takenKeys = keysOf("c/é", taken);
      const after = keysOf("d/", 70);
      const b = new KeyRunBuilder(1024, 200);
      addAll(b, before, true);
      const mark = b.mark();
      addAll(b, takenKeys, true);
      b.rollback(mark);
      addAll(b, after, true);
      const got = b.finish();
      const plain = new KeyRunBuilder(1024, 200);
      addAll(plain, before, true);
      addAll(plain, after, true);
      const want = plain.finish();
      expectSameRun(got, want);
      expect(got.ascii).toBe(true);
      const kb = new KeyBytes();
      for (const k of [...before, ...after]) expect(got.find(k, kb.set(k), { valueAt: 0 })).toBeGreaterThanOrEqual(0);
    });
  }

  it("compares the first key after a rollback with the key before the mark (order still checked)", () => {
    const b = new KeyRunBuilder();
    b.add("m", "1");
    const mark = b.mark();
    b.add("z", "2");
    b.rollback(mark);
    expect(() => b.add("a", "3")).toThrow(/not strictly ascending/);
  });
});

describe("KeyHasher", () => {
  it("gives each key the hash KeyBytes computes from all its bytes", () => {
    const r = testRandom("carried hash");
    const keys = usableEntries(r, 2000).map(([k]) => Buffer.from(k, "utf8"));
    const h = new KeyHasher();
    const kb = new KeyBytes();
    let prev = Buffer.alloc(0);
    for (const k of keys) {
      let shared = 0;
      while (shared < Math.min(prev.length, k.length) && prev[shared] === k[shared]) shared++;
      expect(h.next(k, k.length, shared)).toBe(kb.setBytes(k, 0, k.length).hash());
      prev = k;
    }
  });
});

describe("KeyRun filter", () => {
  it("lets keys crafted to share one FNV-1a hash from its usual start through no more often than others", () => {
    const crafted = collidingKeys(11, "u/");
    expect(new Set(crafted.map((k) => fnvFrom(FNV_START, k))).size, "the keys collide from the fixed start").toBe(1);
    // One crafted key among ordinary ones: with the fixed start, every other crafted key passes the filter.
    const held = [crafted[0]!, ...Array.from({ length: 2000 }, (_, i) => `k/${String(i).padStart(6, "0")}`)].sort(compareKeys);
    const b = new KeyRunBuilder();
    for (const k of held) b.add(k, "v");
    const run = b.finish();
    const kb = new KeyBytes();
    const absent = crafted.slice(1);
    const passed = absent.filter((k) => run.mayHold(kb.set(k))).length;
    // About 1% false positives are expected; 10% leaves room for chance.
    expect(passed).toBeLessThan(absent.length / 10);
    const found = { valueAt: 0 };
    for (const k of held) expect(run.find(k, kb.set(k), found)).toBeGreaterThanOrEqual(0);
  });
});

describe("The key hash (key-hash.ts) the filters take", () => {
  it("spreads keys made to collide from one start from every other start, however the start's low bits fall", () => {
    // FNV-1a's collisions from one start held from every start with the same low 7 bits (one process in 128).
    const r = testRandom("key hash from many starts");
    const fixed = 0x811c9dc5;
    const crafted = collidingKeys(11, "u/", hashFrom, fixed, 7);
    expect(new Set(crafted.map((k) => hashFrom(fixed, k))).size, "the keys collide from the fixed start").toBe(1);
    // Starts that share the fixed start's low 7 bits, then any.
    const sameLowBits = Array.from({ length: 128 }, () => ((r.int(2 ** 25) << 7) | (fixed & 0x7f)) >>> 0);
    for (const start of [...sameLowBits, ...Array.from({ length: 72 }, () => r.int(2 ** 32))]) {
      if (start === fixed) continue;
      expect(new Set(crafted.map((k) => hashFrom(start, k))).size, `start ${start}`).toBeGreaterThan(crafted.length - 8);
    }
  });

  it("lets keys crafted against it from a fixed start through a run's filter no more often than others", () => {
    const crafted = collidingKeys(11, "u/", hashFrom, 0x811c9dc5, 7);
    const held = [crafted[0]!, ...Array.from({ length: 2000 }, (_, i) => `k/${String(i).padStart(6, "0")}`)].sort(compareKeys);
    const b = new KeyRunBuilder();
    for (const k of held) b.add(k, "v");
    const run = b.finish();
    const kb = new KeyBytes();
    const passed = crafted.slice(1).filter((k) => run.mayHold(kb.set(k))).length;
    expect(passed).toBeLessThan((crafted.length - 1) / 10);
  });
});

describe("KeyRun.findBytes", () => {
  it("finds what find finds, and nothing for keys before, between and after the run's keys", () => {
    const b = new KeyRunBuilder();
    const keys = Array.from({ length: 500 }, (_, i) => `k/${String(i * 2 + 1).padStart(5, "0")}é`);
    for (const [i, k] of keys.entries()) b.add(k, `${i}`);
    const run = b.finish();
    const kb = new KeyBytes();
    const found = { valueAt: -1 };
    keys.forEach((k, i) => {
      expect(run.findBytes(kb.set(k), found)).toBe(i);
      expect(Buffer.from(run.value(found.valueAt) as Uint8Array).toString()).toBe(`${i}`);
    });
    for (const k of ["a", "k/", "k/00000é", "k/00002é", "k/00998é", "k/00999", "k/01000é", "z"]) expect(run.findBytes(kb.set(k), found)).toBe(-1);
  });
});
