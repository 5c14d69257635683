/**
 * @module A full checkpoint copies a key run's entries straight into the
 * segment (`SnapshotMerge`, `SegmentBuilder.addBytes`): the segments it
 * writes must be byte for byte those of the path that made a key string and
 * a value array per entry, or stores written before would read differently
 * from stores written after. Seeded keys and odd values: empty values,
 * values of a whole block, keys sharing long prefixes, non-ASCII keys,
 * values that repeat their key's tail, packed, large (held by reference)
 * and paged values, tombstones (the builder alone: a full checkpoint writes
 * none).
 */
import { segmentOfVersion1 } from "../support/earlier-formats.js";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "taquba";
import { writeSegments, type CheckpointWriter } from "../../runtime/engine/checkpoint.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { packValue, type StoredValue } from "../../runtime/engine/paged-value.js";
import { decodeBlock, decodeSegmentTail, readKeySection, readSegment, SegmentBuilder } from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { seededRandom } from "../../runtime/store/prng.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const BLOCK = 512;

/** Seeded distinct keys in key order: long shared prefixes, neighbours one byte apart, non-ASCII ones. */
function seededKeys(r: TestRandom, n: number): string[] {
  const keys = new Set<string>();
  const long = "p/".padEnd(180, "x");
  while (keys.size < n) {
    const i = r.int(1_000_000);
    switch (r.int(5)) {
      case 0:
        keys.add(`${long}/${i}`);
        break;
      case 1:
        keys.add(`q/jobs/${String(i).padStart(10, "0")}`);
        break;
      case 2:
        keys.add(`é/ü/${i}/€`);
        break;
      case 3:
        keys.add(`k${String.fromCodePoint(0x1f600 + r.int(8))}${i}`);
        break;
      default:
        keys.add(`a/${i}`);
    }
  }
  return [...keys].sort(compareKeys);
}

/** A seeded value for `key`: empty, a block's size, its key's ASCII tail, short, long. */
function seededValue(r: TestRandom, key: string): Uint8Array {
  switch (r.int(7)) {
    case 0:
      return new Uint8Array(0);
    case 1:
      return new Uint8Array(BLOCK).fill(r.int(256));
    case 2: {
      const tail = key.slice(-Math.max(1, Math.min(6, key.length)));
      const bytes = new TextEncoder().encode(tail);
      return bytes.every((c) => c < 0x80) ? bytes : Uint8Array.of(7);
    }
    case 3:
      return new Uint8Array(2000 + r.int(3000)).map(() => r.int(256));
    case 4:
      return new Uint8Array(1 + r.int(64)).map(() => r.int(256));
    default:
      return new Uint8Array(65 + r.int(300)).map(() => r.int(256));
  }
}

/** `bytes` placed at a random offset of a larger array: what `addBytes` copies from is never a whole array. */
function embedded(r: TestRandom, bytes: Uint8Array): { buf: Uint8Array; at: number } {
  const at = r.int(40);
  const buf = new Uint8Array(at + bytes.byteLength + r.int(40)).fill(0xee);
  buf.set(bytes, at);
  return { buf, at };
}

/**
 * A segment's entries (key, value length or -1), read as a reopen and the
 * value pager read it: its index against every block's keys, its key
 * section against the index, and the whole of it.
 */
function readChecked(bytes: Uint8Array): [string, number][] {
  const tail = decodeSegmentTail("seg", bytes, bytes.byteLength);
  if (tail.keys !== undefined) readKeySection("seg", tail, () => {});
  for (const [b, info] of tail.blocks.entries()) decodeBlock("seg", b, info, bytes.subarray(info.offset, info.offset + info.length), () => {});
  const read: [string, number][] = [];
  readSegment("seg", bytes, (k, v) => read.push([k, v === undefined ? -1 : v.byteLength]));
  return read;
}

describe("segments written from a key run's bytes", () => {
  it("the builder writes, by either path, the bytes the builder before the bytes path wrote (pinned by hash)", () => {
    // The hash of what the segment builder of the engine before this path wrote for these entries (segment format 1:
    // the bytes written now, laid out as version 1, are those), and of what it writes now (format 2).
    const pinned = "ce8fa2e1bb93d19790cda907741c5f1a682849c689e487f080b5d3800e14a595";
    const pinnedNow = "506cba2bb527b935e0bde1027ca5e5eb2ef57cc05ed2566ff0260985c25979d1";
    for (const viaBytes of [false, true]) {
      const random = seededRandom(20261205);
      const int = (n: number) => Math.floor(random() * n);
      const keys = new Set<string>();
      while (keys.size < 3000) {
        const i = int(1_000_000);
        const c = int(4);
        keys.add(c === 0 ? `p/${"x".repeat(150)}/${i}` : c === 1 ? `q/jobs/${String(i).padStart(10, "0")}` : c === 2 ? `é/${i}/€` : `a/${i}`);
      }
      const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      const hash = createHash("sha256");
      const hashNow = createHash("sha256");
      for (const keySection of [true, false]) {
        const builder = new SegmentBuilder(512, 1024, { keySection });
        for (const k of sorted) {
          const kind = int(6);
          const v =
            kind === 0
              ? undefined
              : kind === 1
                ? new Uint8Array(0)
                : kind === 2
                  ? new Uint8Array(512).fill(9)
                  : kind === 3
                    ? Buffer.from(k.slice(-3))
                    : new Uint8Array(1 + int(200)).map(() => int(256));
          if (!viaBytes) builder.add(k, v);
          else {
            const key = Buffer.from(`__${k}`);
            if (v === undefined) builder.addBytes(key, 2, key.length - 2, undefined, 0, 0);
            else builder.addBytes(key, 2, key.length - 2, Buffer.concat([Buffer.of(1, 2, 3), v]), 3, v.byteLength);
          }
        }
        const bytes = builder.finish();
        hash.update(segmentOfVersion1(bytes));
        hashNow.update(bytes);
      }
      expect(hash.digest("hex"), viaBytes ? "addBytes" : "add").toBe(pinned);
      expect(hashNow.digest("hex"), viaBytes ? "addBytes" : "add").toBe(pinnedNow);
    }
  });

  it("the builder writes the same bytes from encoded keys and value slices as from strings and arrays, tombstones included", () => {
    const r = testRandom("segment addBytes equals add");
    for (const keySection of [true, false]) {
      for (let round = 0; round < 6; round++) {
        const keys = seededKeys(r, 50 + r.int(600));
        const values = keys.map((k) => (r.int(6) === 0 ? undefined : seededValue(r, k)));
        const a = new SegmentBuilder(BLOCK, 1024, { keySection });
        const b = new SegmentBuilder(BLOCK, 1024, { keySection });
        keys.forEach((k, i) => {
          a.add(k, values[i]);
          const key = embedded(r, Buffer.from(k, "utf8"));
          const v = values[i];
          if (v === undefined) b.addBytes(key.buf, key.at, Buffer.byteLength(k), undefined, 0, 0);
          else {
            const value = embedded(r, v);
            b.addBytes(key.buf, key.at, Buffer.byteLength(k), value.buf, value.at, v.byteLength);
          }
          expect(b.lastKey).toBe(a.lastKey);
          expect(b.firstKey).toBe(a.firstKey);
        });
        const bytesA = Buffer.from(a.finish());
        const bytesB = Buffer.from(b.finish());
        expect(bytesB.equals(bytesA)).toBe(true);
        expect(b.blocks).toEqual(a.blocks);
        expect([b.firstKey, b.lastKey]).toEqual([keys[0], keys[keys.length - 1]]);
        expect(readChecked(bytesB)).toEqual(keys.map((k, i) => [k, values[i] === undefined ? -1 : values[i]!.byteLength]));
      }
    }
  });

  it("a full checkpoint of a state over key runs writes the segments the key-and-value path wrote", async () => {
    const r = testRandom("full checkpoint bytes path");
    for (let round = 0; round < 6; round++) {
      const state = new LayeredState({ memtableKeys: 64 + r.int(400), writeSlice: 1, idleSlice: 0, maxRuns: 3 + r.int(6) });
      const keys = seededKeys(r, 300 + r.int(1500));
      const paged = new Map<string, Uint8Array>();
      // Every other round in key order, as a fill writes: each run then holds a stretch of neighbouring keys.
      const order = round % 2 === 0 ? keys.map((_, i) => i) : keys.map((_, i) => i).sort(() => r.random() - 0.5);
      for (const i of order) {
        const k = keys[i]!;
        const v = seededValue(r, k);
        let stored: StoredValue;
        const kind = r.int(4);
        if (kind === 0) {
          // Paged out to run 3: the checkpoint reads it back.
          stored = 3;
          paged.set(k, v);
        } else if (kind === 1) stored = packValue(k, v);
        else stored = v;
        state.set(k, stored);
        if (r.int(300) === 0) state.freeze();
      }
      for (let i = 0; i < keys.length; i += 1 + r.int(20)) state.delete(keys[i]!);
      if (r.int(2) === 0) state.freeze();
      if (r.int(2) === 0) state.mergeStep(r.int(500));
      const readPaged = (k: string, run: number) => {
        expect(run).toBe(3);
        return paged.get(k)!;
      };
      const store = new MemoryStore();
      const writer = (prefix: string): CheckpointWriter => {
        let n = 0;
        return {
          store,
          prefix,
          retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
          epoch: 1,
          maxSegmentBytes: 2048 + r.int(8192),
          blockBytes: BLOCK,
          nextSegmentNumber: () => ++n,
          stopped: () => false,
        };
      };
      const snap = state.snapshot();
      const w1 = writer("old/");
      const w2 = { ...writer("new/"), maxSegmentBytes: w1.maxSegmentBytes };
      // The path before: a key string and a value per entry, from the state's own merge.
      const oldRefs = await writeSegments(w1, [...state.scan()], 0, readPaged);
      const newRefs = await writeSegments(w2, snap.entries(), 0, readPaged);
      expect(newRefs.map(({ name, ...rest }) => rest)).toEqual(oldRefs.map(({ name, ...rest }) => rest));
      expect(newRefs.length).toBeGreaterThan(1);
      for (let s = 0; s < oldRefs.length; s++) {
        const a = (await store.get(`old/${oldRefs[s]!.name}`))!.body;
        const b = (await store.get(`new/${newRefs[s]!.name}`))!.body;
        expect(Buffer.from(b).equals(Buffer.from(a)), `segment ${s}`).toBe(true);
        expect(readChecked(b).length).toBe(newRefs[s]!.entries);
      }
    }
  });
});
