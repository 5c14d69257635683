/**
 * @module A store rewritten in the formats taquba wrote before segment
 * checksums were recorded: segments of format version 1 (no block checksums
 * in the index) and manifests of version 2 (no `sum` per segment, the body
 * alone checksummed). The entries, blocks and key sections stay byte for
 * byte; only the index, the footer and the manifests change, as the earlier
 * writers laid them out.
 */
import type { MemoryStore } from "taquba";
import { ByteWriter, writeU64 } from "../../runtime/engine/byte-io.js";
import { crc32 } from "../../runtime/engine/checksum.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { decodeSegmentIndex } from "../../runtime/engine/segment-format.js";
import { pack } from "msgpackr";
import { keysUnder } from "./store-keys.js";

const FOOTER = 44;

/** `bytes`, a segment of this version, as a version 1 writer laid it out. */
export function segmentOfVersion1(bytes: Uint8Array): Buffer {
  const src = Buffer.from(bytes);
  const size = src.length;
  const footer = size - FOOTER;
  const filterOffset = Number(src.readBigUInt64LE(footer));
  const indexOffset = Number(src.readBigUInt64LE(footer + 12));
  const blocks = decodeSegmentIndex("seg", src, size);
  const w = new ByteWriter(size + 64);
  w.raw(src.subarray(0, indexOffset));
  w.varint(blocks.length);
  for (const b of blocks) {
    w.varint(b.offset);
    w.varint(b.length);
    w.varint(b.entries);
    w.str(b.firstKey);
    w.str(b.lastKey);
  }
  const indexLength = w.pos - indexOffset;
  const at = w.pos;
  w.raw(src.subarray(footer, size));
  const out = Buffer.from(w.bytes());
  writeU64(out, at, filterOffset);
  writeU64(out, at + 12, indexOffset);
  out.writeUInt32LE(indexLength, at + 20);
  out.writeUInt16LE(1, at + 32);
  out.writeUInt32LE(crc32(out.subarray(filterOffset, at + 40)), at + 40);
  return out;
}

/** Manifest `key` of `bytes` as a version 2 writer laid it out, with its segments' sizes taken from `sizes`. */
export function manifestOfVersion2(key: string, bytes: Uint8Array, sizes: ReadonlyMap<string, number>): Buffer {
  // The number the key ends with (zero-padded in a store).
  const m = decodeManifest(key, bytes, Number(key.slice(key.lastIndexOf("/") + 1)));
  const body = pack({
    id: m.id,
    epoch: m.epoch,
    walNext: m.walNext,
    segments: m.segments.map(({ sum: _sum, ...s }) => ({ ...s, bytes: sizes.get(s.name) ?? s.bytes })),
    fences: m.fences,
    createdAt: m.createdAt,
    ...(m.lastSegment === undefined ? {} : { lastSegment: m.lastSegment }),
    ...(m.opener === undefined ? {} : { opener: m.opener }),
  });
  const out = Buffer.alloc(12 + body.length);
  out.writeUInt32LE(0x464d5154, 0);
  out.writeUInt16LE(2, 4);
  out.writeUInt32LE(crc32(body), 8);
  body.copy(out, 12);
  return out;
}

/** Rewrites every segment and manifest of `store` (no prefix) in the earlier formats. */
export async function rewriteInEarlierFormats(store: MemoryStore): Promise<void> {
  const sizes = new Map<string, number>();
  for (const key of await keysUnder(store, "seg/")) {
    const old = segmentOfVersion1((await store.get(key))!.body);
    await store.put(key, old);
    sizes.set(key, old.length);
  }
  for (const key of await keysUnder(store, "manifest/")) {
    await store.put(key, manifestOfVersion2(key, (await store.get(key))!.body, sizes));
  }
}
