/**
 * @module The key section of segments (segment-format.ts): what it says
 * agrees with the blocks, every disagreement or damage is refused naming
 * the segment, a writer's open builds from it exactly the state it built
 * from whole segments, and stores mixing segments with and without it
 * (written before it existed) open the same.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch, withCounting, type EngineOptions } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { readU64, writeU64 } from "../../runtime/engine/byte-io.js";
import type { Manifest, SegmentRef } from "../../runtime/engine/manifest.js";
import type { PagePolicy, StoredValue } from "../../runtime/engine/paged-value.js";
import { loadSegments, type StoreContext } from "../../runtime/engine/recovery.js";
import {
  decodeSegmentIndex,
  decodeSegmentTail,
  readKeySection,
  readSegment,
  SECTION_IN_BLOCK,
  SECTION_INLINE,
  SECTION_KEY_TAIL,
  SegmentBuilder,
  segmentWriting,
} from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);

afterEach(() => {
  segmentWriting.keySection = true;
});

/** Keys ASCII and not; tombstones, key tails, empty, small, 64 and 65 B, large values. */
function randomEntries(r: TestRandom, n: number): [string, Uint8Array | undefined][] {
  const heads = ["j/", "p/q/5/", "é/", "x/\u{1f600}/", "k"];
  const keys = new Set<string>();
  while (keys.size < n) keys.add(`${heads[r.int(heads.length)]}${String(r.int(1e6)).padStart(7, "0")}${r.int(4) === 0 ? "ü" : ""}`);
  return [...keys].sort(compareKeys).map((k) => {
    const form = r.int(7);
    if (form === 0) return [k, undefined];
    if (form === 1) return [k, enc(k.slice(-1 - r.int(Math.min(6, k.length - 2))))];
    const len = [0, r.int(64), 64, 65, 100 + r.int(1500)][form - 2]!;
    return [k, Uint8Array.from({ length: len }, () => r.int(256))];
  });
}

function segmentOf(entries: [string, Uint8Array | undefined][], blockBytes = 512, keySection = true): Buffer {
  const b = new SegmentBuilder(blockBytes, 4096, { keySection });
  for (const [k, v] of entries) b.add(k, v);
  return b.finish();
}

/** What the section says of each entry, as [key, kind, value length, inline value]. */
function sectionOf(name: string, seg: Buffer): [string, number, number, string | undefined][] {
  const out: [string, number, number, string | undefined][] = [];
  const tail = decodeSegmentTail(name, seg, seg.length);
  readKeySection(name, tail, (key, keyLen, kind, valueLen, section, valueAt) => {
    out.push([
      key.toString("utf8", 0, keyLen),
      valueLen < 0 ? -1 : kind,
      valueLen,
      kind === SECTION_INLINE && valueLen >= 0 ? section.subarray(valueAt, valueAt + valueLen).toString("hex") : undefined,
    ]);
  });
  return out;
}

/** The parts of a built segment: its blocks, filter slot, index and footer fields. */
function parts(seg: Buffer) {
  const footer = seg.length - 44;
  const filterOffset = readU64(seg, footer);
  const indexOffset = readU64(seg, footer + 12);
  return {
    blocks: seg.subarray(0, filterOffset),
    slot: seg.subarray(filterOffset, indexOffset),
    index: seg.subarray(indexOffset, footer),
    footer: seg.subarray(footer),
  };
}

/** `seg` with its filter slot replaced by `slot`, offsets and the tail checksum made right again: damage no checksum catches. */
function reseal(seg: Buffer, slot: Uint8Array): Buffer {
  const p = parts(seg);
  const out = Buffer.concat([p.blocks, slot, p.index, p.footer]);
  const footer = out.length - 44;
  writeU64(out, footer, p.blocks.length);
  out.writeUInt32LE(slot.length, footer + 8);
  writeU64(out, footer + 12, p.blocks.length + slot.length);
  out.writeUInt32LE(crc32(out.subarray(p.blocks.length, footer + 40)), footer + 40);
  return out;
}

function varint(v: number): number[] {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** One entry of a hand-made key section. */
interface Entry {
  key: string;
  /** The value descriptor: `d` of the format. */
  d: number;
  inline?: number[];
  /** Bytes shared with the previous key, when not the longest shared prefix. */
  shared?: number;
}

/** A key-section filter slot (kind 1) holding `entries`, counting `count` of them. */
function slotOf(entries: Entry[], count = entries.length, extra: number[] = []): Buffer {
  const body: number[] = [...varint(count)];
  let prev = Buffer.alloc(0);
  for (const e of entries) {
    const key = Buffer.from(e.key, "utf8");
    let lcp = 0;
    while (lcp < prev.length && lcp < key.length && prev[lcp] === key[lcp]) lcp++;
    const shared = e.shared ?? lcp;
    body.push(...varint(shared), ...varint(key.length - shared), ...key.subarray(shared), ...varint(e.d), ...(e.inline ?? []));
    prev = key;
  }
  body.push(...extra);
  return Buffer.from([1, ...varint(body.length), ...body]);
}

/**
 * A segment of three blocks of three entries, keys k11..k33: each block a
 * key tail, an inline value, then a tombstone (the last block a value of
 * 70 B held in its block instead); and the section the builder wrote for it.
 */
function threeBlocks(): { seg: Buffer; entries: Entry[] } {
  const b = new SegmentBuilder(18, 4096);
  const described: Entry[] = [];
  for (let blk = 1; blk <= 3; blk++) {
    // 6 + 7 + 5 (or 75) bytes: each block ends at its third entry.
    b.add(`k${blk}1`, enc("1"));
    described.push({ key: `k${blk}1`, d: 1 * 4 + SECTION_KEY_TAIL });
    b.add(`k${blk}2`, new Uint8Array([9, 9]));
    described.push({ key: `k${blk}2`, d: 2 * 4 + SECTION_INLINE, inline: [9, 9] });
    if (blk < 3) {
      b.add(`k${blk}3`, undefined);
      described.push({ key: `k${blk}3`, d: 0 });
    } else {
      b.add(`k${blk}3`, new Uint8Array(70).fill(7));
      described.push({ key: `k${blk}3`, d: 70 * 4 + SECTION_IN_BLOCK });
    }
  }
  const seg = b.finish();
  expect(decodeSegmentIndex("seg/x", seg, seg.length).map((x) => x.entries)).toEqual([3, 3, 3]);
  return { seg, entries: described };
}

describe("segment key section", () => {
  it("says of every entry what its block holds, and readers of segments without it read both the same", () => {
    const r = testRandom("key section entries");
    const entries = randomEntries(r, 2000);
    const seg = segmentOf(entries);
    const old = segmentOf(entries, 512, false);
    const expected = entries.map(([k, v]): [string, number, number, string | undefined] => {
      if (v === undefined) return [k, -1, -1, undefined];
      const tail = Buffer.from(k, "utf8").subarray(-v.byteLength);
      const ascii = v.byteLength > 0 && v.every((c) => c < 0x80);
      if (ascii && tail.length === v.byteLength && Buffer.compare(tail, v) === 0) return [k, SECTION_KEY_TAIL, v.byteLength, undefined];
      if (v.byteLength <= 64) return [k, SECTION_INLINE, v.byteLength, Buffer.from(v).toString("hex")];
      return [k, SECTION_IN_BLOCK, v.byteLength, undefined];
    });
    expect(sectionOf("seg/x", seg)).toEqual(expected);
    // Every form occurs.
    for (const kind of [-1, SECTION_KEY_TAIL, SECTION_INLINE, SECTION_IN_BLOCK]) expect(expected.some((e) => e[1] === kind)).toBe(true);
    // The reader of version 1 segments skips the slot: same entries, same index.
    const read = (s: Buffer) => {
      const out: [string, string | undefined][] = [];
      readSegment("seg/x", s, (k, v) => out.push([k, v === undefined ? undefined : Buffer.from(v).toString("hex")]));
      return out;
    };
    expect(read(seg)).toEqual(read(old));
    expect(decodeSegmentIndex("seg/x", seg, seg.length)).toEqual(decodeSegmentIndex("seg/x", old, old.length));
    expect(decodeSegmentTail("seg/x", old, old.length).keys).toBeUndefined();
    expect(seg.length - old.length).toBeLessThan(old.length / 2);
  });

  it("a hand-made section equal to the written one reads; every disagreement with the blocks is refused naming the segment", () => {
    const { seg, entries } = threeBlocks();
    // The helpers write what the builder writes: the baseline passes.
    expect(Buffer.compare(reseal(seg, slotOf(entries)), seg)).toBe(0);
    const refused = (slot: Buffer, why: RegExp) => {
      const bad = reseal(seg, slot);
      expect(() => sectionOf("seg/bad", bad)).toThrow(StoreCorruptedError);
      expect(() => sectionOf("seg/bad", bad)).toThrow(why);
      expect(() => sectionOf("seg/bad", bad)).toThrow(/"seg\/bad"/);
    };
    const change = (i: number, e: Partial<Entry>) => entries.map((x, j) => (j === i ? { ...x, ...e } : x));
    refused(slotOf(entries, 10), /lists 10 entries, its footer says 9/);
    refused(slotOf(entries.slice(0, 8), 9), /truncated/);
    refused(slotOf(entries, 9, [0]), /1 bytes past its entries/);
    const slot = slotOf(entries);
    refused(Buffer.concat([slot, Buffer.from([0])]), /says \d+ bytes, its slot holds \d+/);
    // Order: a key not after the previous one, or not front-coded by its longest shared prefix.
    refused(slotOf(change(4, { key: "k21" })), /out of order at entry 4/);
    refused(slotOf(change(4, { shared: 1 })), /out of order at entry 4/);
    // Keys at block bounds.
    refused(slotOf(change(3, { key: "k20" })), /first key of block 1/);
    refused(slotOf(change(5, { key: "k24" })), /last key of block 1/);
    // A key inside a block, changed in length: the block's length disagrees.
    refused(slotOf(change(4, { key: "k22x" })), /gives block 1 \d+ bytes, its index \d+/);
    // Value lengths.
    const inBlock = entries.findIndex((e) => e.d % 4 === SECTION_IN_BLOCK);
    refused(slotOf(change(inBlock, { d: 71 * 4 + SECTION_IN_BLOCK })), /gives block \d \d+ bytes/);
    const tomb = entries.findIndex((e) => e.d === 0);
    refused(slotOf(change(tomb, { d: 1 * 4 + SECTION_INLINE, inline: [0] })), /gives block \d \d+ bytes/);
    refused(slotOf(change(tomb, { d: 4 })), /undefined value descriptor 4/);
    const tail = entries.findIndex((e) => e.d % 4 === SECTION_KEY_TAIL);
    refused(slotOf(change(tail, { d: 9 * 4 + SECTION_KEY_TAIL })), /key tail of 9 bytes for a key of 3/);
    const inline = entries.findIndex((e) => e.d % 4 === SECTION_INLINE);
    refused(slotOf(change(inline, { d: 3 * 4 + SECTION_INLINE, inline: [9, 9, 9] })), /gives block \d \d+ bytes/);
    refused(slotOf(entries.map((x, j) => (j === 8 ? { ...x, d: 200 * 4 + SECTION_INLINE } : x))), /truncated: an inline value/);
  });

  it("refuses a key tail that is not ASCII, and damage the tail checksum catches anywhere in the section", () => {
    // The value is one byte either way, so the block's length agrees: only the tail's check can refuse it.
    const seg = segmentOf([["a/é", enc("x")]], 512);
    expect(sectionOf("seg/t", reseal(seg, slotOf([{ key: "a/é", d: 1 * 4 + SECTION_INLINE, inline: [0x78] }])))).toEqual([["a/é", SECTION_INLINE, 1, "78"]]);
    expect(() => sectionOf("seg/t", reseal(seg, slotOf([{ key: "a/é", d: 1 * 4 + SECTION_KEY_TAIL }])))).toThrow(/"seg\/t".*key tail that is not ASCII/);
    const { seg: big } = threeBlocks();
    const p = parts(big);
    for (let i = 0; i < p.slot.length; i++) {
      const flipped = Buffer.from(big);
      flipped[p.blocks.length + i]! ^= 0x10;
      expect(() => sectionOf("seg/f", flipped), `flip at ${i}`).toThrow(/"seg\/f".*(checksum mismatch|filter|key section)/);
    }
  });
});

/** A store of segments written by `write`, one run each, and its manifest. */
async function storeOf(runs: [string, Uint8Array | undefined][][], keySection: (run: number) => boolean) {
  const store = new MemoryStore();
  const segments: SegmentRef[] = [];
  for (let run = 0; run < runs.length; run++) {
    // Two segments per run.
    const entries = runs[run]!;
    const halves = [entries.slice(0, entries.length >> 1), entries.slice(entries.length >> 1)];
    for (let h = 0; h < 2; h++) {
      const part = halves[h]!;
      const seg = segmentOf(part, 1024, keySection(run));
      const name = `seg/1-${run * 2 + h + 1}`;
      await store.put(name, seg);
      segments.push({ name, bytes: seg.length, entries: part.length, firstKey: part[0]![0], lastKey: part[part.length - 1]![0], run: run + 1 });
    }
  }
  const manifest: Manifest = { id: runs.length, epoch: 1, walNext: 1, segments, fences: [], createdAt: 0 };
  return { store, manifest };
}

const ctxOf = (store: MemoryStore | ReturnType<typeof withCounting>): StoreContext => ({
  store,
  prefix: "",
  retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
});

const show = (v: StoredValue) => (v instanceof Uint8Array ? `bytes:${Buffer.from(v).toString("hex")}` : `${typeof v}:${String(v)}`);

async function stateOf(store: MemoryStore, manifest: Manifest, policy: PagePolicy | undefined): Promise<string[]> {
  const state = (await loadSegments(ctxOf(store), manifest, undefined, policy))!;
  state.stopIdleMerges();
  const entries = [...state.scan()];
  // Point reads go through the runs' filters and block search: every key is found with its value.
  for (const [k, v] of entries) expect(show(state.get(k)!)).toBe(show(v));
  return entries.map(([k, v]) => `${k}=${show(v)}`);
}

describe("opening from key sections", () => {
  const policies: [string, PagePolicy | undefined][] = [
    ["paging j/ from 64 B", { keyPrefixes: ["j/", "é/"], minBytes: 64 }],
    ["paging j/ from 8 B", { keyPrefixes: ["j/"], minBytes: 8 }],
    ["paging nothing small", { keyPrefixes: ["j/", "p/", "é/", "x/", "k"], minBytes: 65 }],
    ["no paging", undefined],
  ];
  for (const [name, policy] of policies) {
    it(`builds exactly the state whole segments give, segments with and without the section mixed (${name})`, async () => {
      const r = testRandom(`open from sections ${name}`);
      const runs = [randomEntries(r, 1500), randomEntries(r, 400), randomEntries(r, 300)];
      const whole = await storeOf(runs, () => false);
      const expected = await stateOf(whole.store, whole.manifest, policy);
      expect(expected.length).toBeGreaterThan(1000);
      for (const mix of [() => true, (run: number) => run % 2 === 0, (run: number) => run % 2 === 1]) {
        const s = await storeOf(runs, mix);
        expect(await stateOf(s.store, s.manifest, policy)).toEqual(expected);
      }
    });
  }

  it("reads only the tails of segments whose held values the section holds", async () => {
    const r = testRandom("open reads tails");
    const entries: [string, Uint8Array | undefined][] = [];
    for (let i = 0; i < 4000; i++) {
      entries.push([`j/${String(i).padStart(6, "0")}`, Uint8Array.from({ length: 200 }, () => r.int(256))]);
      entries.push([`p/q/${String(i).padStart(6, "0")}`, enc(String(i).padStart(6, "0"))]);
    }
    entries.sort((a, b) => compareKeys(a[0], b[0]));
    const policy: PagePolicy = { keyPrefixes: ["j/"], minBytes: 64 };
    for (const keySection of [true, false]) {
      const { store, manifest } = await storeOf([entries], () => keySection);
      const counted = withCounting(store);
      const state = (await loadSegments(ctxOf(store as MemoryStore), manifest, undefined, policy))!;
      state.stopIdleMerges();
      const stored = manifest.segments.reduce((n, s) => n + s.bytes, 0);
      counted.reset();
      const again = (await loadSegments({ ...ctxOf(store), store: counted }, manifest, undefined, policy))!;
      again.stopIdleMerges();
      expect(again.size).toBe(8000);
      if (keySection) expect(counted.counts.bytesOut).toBeLessThan(stored / 3);
      else expect(counted.counts.bytesOut).toBeGreaterThanOrEqual(stored);
    }
  });

  it("a segment gone at its first read, or after its tail and before its whole read, ends the load as missing", async () => {
    const r = testRandom("open missing segment");
    const policy: PagePolicy = { keyPrefixes: ["j/"], minBytes: 64 };
    // Without key sections a writer's open reads each segment's tail, then the segment whole.
    const { store, manifest } = await storeOf([randomEntries(r, 400), randomEntries(r, 200)], () => false);
    const name = manifest.segments[2]!.name;
    const reads: string[] = [];
    const vanishing: MemoryStore = Object.assign(Object.create(store) as MemoryStore, {
      getRange: async (key: string, offset: number, length: number) => {
        const got = await store.getRange(key, offset, length);
        reads.push(`range ${key}`);
        // Deleted just after its tail was read.
        if (key === name) await store.delete(key);
        return got;
      },
      get: async (key: string) => {
        reads.push(`get ${key}`);
        return store.get(key);
      },
      // The open reads segments whole borrowed: a whole read as well.
      getBorrowed: async (key: string) => {
        reads.push(`get ${key}`);
        return store.getBorrowed(key);
      },
    });
    const missing: string[] = [];
    expect(await loadSegments(ctxOf(vanishing), manifest, (key) => missing.push(key), policy)).toBeUndefined();
    expect(missing).toEqual([name]);
    // The tail was read, and the whole read found nothing.
    expect(reads).toContain(`range ${name}`);
    expect(reads).toContain(`get ${name}`);

    // Gone before any read: the same exit.
    const again: string[] = [];
    expect(await loadSegments(ctxOf(store), manifest, (key) => again.push(key), policy)).toBeUndefined();
    expect(again).toEqual([name]);
  });

  it("refuses a segment shorter than its manifest says, naming it", async () => {
    const r = testRandom("open short segment");
    const { store, manifest } = await storeOf([randomEntries(r, 400)], () => true);
    const name = manifest.segments[1]!.name;
    const bytes = (await store.get(name))!.body;
    await store.put(name, bytes.subarray(10));
    await expect(loadSegments(ctxOf(store), manifest, undefined, { keyPrefixes: ["j/"], minBytes: 64 })).rejects.toThrow(
      new RegExp(`"${name}".*segment ends before byte`),
    );
  });
});

describe("engine stores with and without key sections", () => {
  const paged: EngineOptions = { pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 1 << 20 }, checkpointWalObjects: 0 };

  /** Checkpoints written alternately without and with the section; the model of what is stored. */
  async function mixedStore(): Promise<{ store: MemoryStore; model: Map<string, string> }> {
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const r = testRandom("engine mixed key sections");
    for (let round = 0; round < 6; round++) {
      segmentWriting.keySection = round % 2 === 1;
      const engine = await Engine.open(store, { ...paged, maxSegmentBytes: 16 * 1024 });
      const b = new WriteBatch();
      for (let i = 0; i < 400; i++) {
        const n = r.int(1000);
        const key = [`j/${n}`, `p/q/${n}`, `o/${n}`][r.int(3)]!;
        if (r.int(5) === 0) {
          b.delete(key);
          model.delete(key);
          continue;
        }
        const value = key.startsWith("p/") ? String(n) : key.startsWith("o/") ? "o".repeat(r.int(200)) : `${key}:${"v".repeat(r.int(150))}`;
        b.put(key, enc(value));
        model.set(key, value);
      }
      await engine.commit(b);
      await engine.checkpoint();
      await engine.close();
    }
    segmentWriting.keySection = true;
    return { store, model };
  }

  it("a writer with and without paging, and a reader, open the same state from a store of mixed segments", async () => {
    const { store, model } = await mixedStore();
    const expected = [...model.entries()].sort((a, b) => compareKeys(a[0], b[0]));
    for (const opts of [paged, {}]) {
      const engine = await Engine.open(store, opts);
      const keys = expected.map(([k]) => k);
      for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
      expect([...engine.scan()].map(([k, v]) => [k, new TextDecoder().decode(v)])).toEqual(expected);
      await engine.close();
    }
    const reader = await EngineReader.open(store);
    expect([...reader.scan()].map(([k, v]) => [k, new TextDecoder().decode(v)])).toEqual(expected);
  });

  it("a writer refuses to open a store whose segment's key section is damaged, naming the segment", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, paged);
    const b = new WriteBatch();
    for (let i = 0; i < 300; i++) b.put(`j/${String(i).padStart(4, "0")}`, enc("v".repeat(100)));
    await engine.commit(b);
    await engine.checkpoint();
    await engine.close();
    const names: string[] = [];
    for await (const o of store.list("seg/")) names.push(o.key);
    expect(names.length).toBe(1);
    const seg = Buffer.from((await store.get(names[0]!))!.body);
    const slotAt = readU64(seg, seg.length - 44);
    seg[slotAt + 12]! ^= 0x01;
    await store.put(names[0]!, seg);
    await expect(Engine.open(store, paged)).rejects.toThrow(StoreCorruptedError);
    await expect(Engine.open(store, paged)).rejects.toThrow(new RegExp(`"${names[0]}"`));
  });
});
