/**
 * @module Attacks on open by a manifest that lies about its segments (a
 * manifest rewritten under a recomputed checksum): sizes and entry counts
 * too large, too small or absurd are refused with `StoreCorruptedError`
 * naming the segment, by a paged writer (tails), a writer without paging,
 * a reader (whole segments) and over a store without ranged reads alike.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch, type EngineOptions, type ObjectStore } from "taquba";
import { decodeManifest, encodeManifest, type SegmentRef } from "../../runtime/engine/manifest.js";

const enc = (s: string) => new TextEncoder().encode(s);

const paged: EngineOptions = {
  pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 4096 },
  checkpointWalObjects: 0,
  segmentBlockBytes: 512,
  maxSegmentBytes: 8 * 1024,
};

/** A store of three checkpoints of 200 keys, a third of their values paged. */
async function filled(): Promise<MemoryStore> {
  const store = new MemoryStore();
  const e = await Engine.open(store, paged);
  for (let c = 0; c < 3; c++) {
    const b = new WriteBatch();
    for (let i = 0; i < 200; i++) b.put(`j/${c}/${String(i).padStart(4, "0")}`, enc("v".repeat(i % 3 === 0 ? 100 : 10)));
    await e.commit(b);
    await e.checkpoint();
  }
  await e.close();
  return store;
}

/** Rewrites the newest manifest with `lie` applied to its first segment; returns that segment's key. */
async function lieInManifest(store: MemoryStore, lie: (seg: { bytes: number; entries: number }) => void): Promise<string> {
  const keys: string[] = [];
  for await (const o of store.list("manifest/")) keys.push(o.key);
  const key = keys.sort().at(-1)!;
  const m = decodeManifest(key, (await store.get(key))!.body, Number(key.split("/")[1]));
  const seg = m.segments[0]! as { -readonly [K in keyof SegmentRef]: SegmentRef[K] };
  lie(seg);
  await store.put(key, encodeManifest(m));
  return seg.name;
}

/** The same store without `getRange`: every read fetches the whole object. */
const noRanges = (s: ObjectStore): ObjectStore => ({
  get: (k) => s.get(k),
  put: (k, b, o) => s.put(k, b, o),
  delete: (k) => s.delete(k),
  list: (p, o) => s.list(p, o),
});

const opens: [string, (s: MemoryStore) => Promise<unknown>][] = [
  ["a paged writer (tails)", async (s) => (await Engine.open(s, paged)).close()],
  ["a writer without paging (whole)", async (s) => (await Engine.open(s, { ...paged, pageValues: undefined })).close()],
  ["a reader (whole)", async (s) => (await EngineReader.open(s)).close()],
  ["a paged writer over a store without ranged reads", async (s) => (await Engine.open(noRanges(s), paged)).close()],
];

const lies: [string, (seg: { bytes: number; entries: number }) => void][] = [
  ["2^40 entries and bytes", (s) => Object.assign(s, { entries: 2 ** 40, bytes: 2 ** 40 })],
  ["1e9 entries and bytes", (s) => Object.assign(s, { entries: 1e9, bytes: 1e9 })],
  ["2^52 bytes", (s) => Object.assign(s, { bytes: 2 ** 52 })],
  ["100 bytes more", (s) => Object.assign(s, { bytes: s.bytes + 100 })],
  ["100 bytes fewer", (s) => Object.assign(s, { bytes: s.bytes - 100 })],
  ["10 bytes", (s) => Object.assign(s, { bytes: 10 })],
  ["0 bytes", (s) => Object.assign(s, { bytes: 0 })],
  ["2^40 entries", (s) => Object.assign(s, { entries: 2 ** 40 })],
  ["0 entries", (s) => Object.assign(s, { entries: 0 })],
];

describe("a manifest lying about a segment's size or entry count", () => {
  for (const [lie, apply] of lies) {
    for (const [who, open] of opens) {
      it(`${lie}: ${who} refuses it naming the segment`, async () => {
        const store = await filled();
        const name = await lieInManifest(store, apply);
        const err = await open(store).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(StoreCorruptedError);
        expect((err as StoreCorruptedError).message).toContain(name);
      });
    }
  }

  it("the manifest unchanged, every way of opening reads the store", async () => {
    const store = await filled();
    for (const [, open] of opens) await open(store);
    const reader = await EngineReader.open(store);
    expect(reader.get("j/2/0199")).toEqual(enc("v".repeat(10)));
    await reader.close();
  });
});
