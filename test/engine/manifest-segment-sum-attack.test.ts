/**
 * @module Attack on the segment checksums a manifest records (`sum`,
 * manifest format 3): a sum of the wrong width or kind, one in a manifest
 * of format 2, one recorded for a segment of format 1 (whose tail checksum
 * covers no block), and a sum left out; and a store of format 2 manifests
 * and format 1 segments that a writer of format 3 carries on. A sum that
 * cannot be a segment's checksum is refused with StoreCorruptedError
 * naming the object, before anything is written; a sum left out, or a
 * segment of an earlier format carried over without one, is read as before
 * and the state stays whole through a compaction and reopens.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch, type ObjectStore } from "taquba";
import { pack } from "msgpackr";
import { crc32 } from "../../runtime/engine/checksum.js";
import { decodeManifest, encodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { rewriteInEarlierFormats, segmentOfVersion1 } from "../support/earlier-formats.js";
import { keysUnder } from "../support/store-keys.js";

const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

async function newestManifest(store: MemoryStore): Promise<{ key: string; m: Manifest }> {
  const key = (await keysUnder(store, "manifest/")).at(-1)!;
  return { key, m: decodeManifest(key, (await store.get(key))!.body, parseNumberedKey("", "manifest", key)!) };
}

/** A store of one checkpoint of 100 keys, its newest manifest of format 3 with a sum for its segment. */
async function checkpointed(): Promise<MemoryStore> {
  const store = new MemoryStore();
  const engine = await Engine.open(store, MANUAL);
  const b = new WriteBatch();
  for (let i = 0; i < 100; i++) b.put(`k/${String(i).padStart(3, "0")}`, enc(`v${i}`));
  await engine.commit(b);
  await engine.checkpoint();
  await engine.close();
  const { m } = await newestManifest(store);
  expect(m.segments.length).toBeGreaterThan(0);
  for (const s of m.segments) expect(typeof s.sum).toBe("number");
  return store;
}

/** `inner`, counting puts and deletes of the engine's durable objects. */
function counting(inner: MemoryStore): { store: ObjectStore; writes: () => number } {
  let writes = 0;
  const durable = (k: string) => /^(manifest|wal|seg)\//.test(k);
  return {
    writes: () => writes,
    store: {
      get: (k) => inner.get(k),
      getRange: (k, o, l) => inner.getRange(k, o, l),
      put: (k, b, o) => {
        if (durable(k)) writes++;
        return inner.put(k, b, o);
      },
      delete: (k) => {
        if (durable(k)) writes++;
        return inner.delete(k);
      },
      list: (p, o) => inner.list(p, o),
    },
  };
}

async function refused(p: Promise<{ close(): Promise<void> }>): Promise<StoreCorruptedError> {
  const err = await p.then(
    async (opened) => {
      await opened.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreCorruptedError);
  return err as StoreCorruptedError;
}

/** A manifest of `version` (2 or 3) with `m`'s fields, its segments' fields as given, checksummed as that version is. */
function manifestBytes(version: 2 | 3, m: Manifest, segments: unknown[]): Buffer {
  const body = pack({ id: m.id, epoch: m.epoch, walNext: m.walNext, segments, fences: m.fences, createdAt: m.createdAt, lastSegment: m.lastSegment });
  const out = Buffer.alloc(12 + body.length);
  out.writeUInt32LE(0x464d5154, 0);
  out.writeUInt16LE(version, 4);
  body.copy(out, 12);
  out.writeUInt32LE(version < 3 ? crc32(body) : crc32(body, crc32(out.subarray(0, 8))), 8);
  return out;
}

describe("segment checksums a manifest records, attacked", () => {
  const wrong: [string, unknown][] = [
    ["33 bits wide", 2 ** 32],
    ["past the integers a number holds", 2 ** 53 + 2],
    ["negative", -1],
    ["a fraction", 1.5],
    ["a string", "00c0ffee"],
    ["true", true],
    ["null", null],
    ["bytes", new Uint8Array(4)],
  ];
  for (const [what, sum] of wrong) {
    it(`refuses a sum that is ${what}, for a writer and a reader, writing nothing`, async () => {
      const store = await checkpointed();
      const { key, m } = await newestManifest(store);
      await store.put(key, manifestBytes(3, m, [{ ...m.segments[0]!, sum }, ...m.segments.slice(1)]));
      const c = counting(store);
      const err = await refused(Engine.open(c.store, MANUAL));
      expect(err.message).toContain(key);
      await refused(EngineReader.open(store));
      expect(c.writes()).toBe(0);
    });
  }

  it("refuses a sum in a manifest of format 2, which records none", async () => {
    const store = await checkpointed();
    const { key, m } = await newestManifest(store);
    await store.put(key, manifestBytes(2, m, m.segments));
    const c = counting(store);
    expect((await refused(Engine.open(c.store, MANUAL))).message).toMatch(/fields are missing or malformed/);
    expect(c.writes()).toBe(0);
  });

  it("refuses a sum recorded for a segment of format 1, whose tail checksum covers no block, saying so", async () => {
    const store = await checkpointed();
    const { key, m } = await newestManifest(store);
    const seg = m.segments[0]!;
    const old = segmentOfVersion1((await store.get(seg.name))!.body);
    await store.put(seg.name, old);
    // The sum recorded is the old segment's own tail checksum: only its format tells it was never a format 3 manifest's.
    await store.put(key, encodeManifest({ ...m, segments: [{ ...seg, bytes: old.length, sum: old.readUInt32LE(old.length - 4) }, ...m.segments.slice(1)] }));
    for (const open of [() => Engine.open(store, MANUAL), () => EngineReader.open(store)]) {
      const err = await refused(open());
      expect(err.message).toContain(seg.name);
      expect(err.message).toMatch(/format version 1/);
    }
  });

  it("reads a segment of format 2 whose sum was left out as before", async () => {
    const store = await checkpointed();
    const { key, m } = await newestManifest(store);
    await store.put(key, encodeManifest({ ...m, segments: m.segments.map(({ sum: _sum, ...s }) => s) }));
    const reader = await EngineReader.open(store);
    expect(dec(reader.get("k/099")!)).toBe("v99");
    await reader.close();
  });

  it("carries segments of format 1 from manifests of format 2 beside new ones through checkpoints, a compaction and reopens", async () => {
    const store = await checkpointed();
    await rewriteInEarlierFormats(store);
    const model = new Map<string, string>();
    for (let i = 0; i < 100; i++) model.set(`k/${String(i).padStart(3, "0")}`, `v${i}`);
    const opts = { ...MANUAL, maxSegmentRuns: 3 };
    for (let round = 0; round < 5; round++) {
      const engine = await Engine.open(store, opts);
      const b = new WriteBatch();
      for (let i = round; i < 100; i += 7) {
        const k = `k/${String(i).padStart(3, "0")}`;
        if ((i + round) % 3 === 0) {
          b.delete(k);
          model.delete(k);
        } else {
          b.put(k, enc(`r${round}.${i}`));
          model.set(k, `r${round}.${i}`);
        }
      }
      await engine.commit(b);
      await engine.checkpoint();
      expect(new Map([...engine.scan()].map(([k, v]) => [k, dec(v)]))).toEqual(model);
      await engine.close();
      const { m } = await newestManifest(store);
      // Runs carried over from the earlier formats have no sum; every run written since has one.
      const reader = await EngineReader.open(store);
      expect(new Map([...reader.scan()].map(([k, v]) => [k, dec(v)]))).toEqual(model);
      await reader.close();
      if (round === 0) expect(m.segments.some((s) => s.sum === undefined)).toBe(true);
    }
    // After a compaction every segment is of this format, with its sum.
    const { m } = await newestManifest(store);
    expect(m.segments.every((s) => typeof s.sum === "number")).toBe(true);
  });
});
