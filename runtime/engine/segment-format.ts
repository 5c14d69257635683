/**
 * @module The segment format: an immutable, sorted run of key/value entries
 * written by a checkpoint.
 *
 * Layout:
 * ```
 * [block 0] ... [block n-1] [filter] [index] [footer: 44 bytes]
 * block   entries, then u32 CRC-32 of the entries; an entry is varint keyLen, key UTF-8,
 *         varint (valueLen * 2 + tombstone bit), value. A tombstone (bit 1, no value) marks a
 *         deleted key; full checkpoints never write one, incremental ones do (manifest.ts)
 * filter  u8 kind, varint length, bytes. Kind 0: nothing. Kind 1, the key section: varint
 *         count, then per entry in key order varint shared (bytes shared with the previous
 *         key), varint suffix length, suffix, varint value descriptor d: 0 a tombstone;
 *         d % 4 = 1 the value is the last d / 4 bytes of its key (all ASCII); 2 the value
 *         follows (d / 4 bytes, at most `KEY_SECTION_INLINE_BYTES`); 3 a value of d / 4
 *         bytes held in its block only. Readers of version 1 skip the slot whatever its kind
 * index   varint blockCount, then per block: varint offset, varint length (with CRC),
 *         varint entryCount, u32 the block's CRC-32 (version 2 on; version 1 has none),
 *         first key, last key (length-prefixed UTF-8)
 * footer  u64 filterOffset, u32 filterLength, u64 indexOffset, u32 indexLength,
 *         u64 entryCount, u16 version, u16 flags, "TQSG", u32 CRC-32 of filter + index + footer
 * ```
 * A writer's open reads each segment's tail (`segmentIndexStart`, `decodeSegmentTail`) and
 * builds its keys from the key section (`readKeySection`, checked against the index); a
 * segment without one is read whole (`readSegmentEntries`: positions, no strings). Paged values are
 * read by block: the footer and index with one ranged read of the tail
 * (`segmentIndexStart`, then `decodeSegmentIndex`), then single blocks
 * (`decodeBlock`), each verified against its own checksum.
 *
 * From version 2 the index holds each block's checksum, so the tail checksum
 * covers every byte of the segment through them: it is the segment's `sum`,
 * which the manifest records to tell a segment from another one of the same
 * size, entry count and key range (see `checkSegmentIdentity`), and every
 * block read is checked against the checksum its index gives.
 */
import { crc32 } from "./checksum.js";
import { StoreCorruptedError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import { asBuffer, ByteReader, ByteWriter, DecodeError, readU64, varintBytes, writeU64 } from "./byte-io.js";
import { UnsupportedFormatError } from "./format-error.js";

/**
 * The error of a damaged segment: the key alone means nothing to a user, so
 * it says what the object is, that the store is corrupt, and what to do.
 */
export function segmentCorrupted(objectKey: string, detail: string): StoreCorruptedError {
  return new StoreCorruptedError(
    objectKey,
    `${detail}; it is one of the store's checkpoint segments, so the store is corrupt`,
    "restore the store from a backup or remove its data: the keys this segment holds cannot be read until then",
  );
}

/** The segment format this engine writes; it reads this and older. */
export const SEGMENT_FORMAT_VERSION = 2;
const MAGIC = 0x47535154; // "TQSG" read as little-endian u32
const FOOTER_BYTES = 44;
/** Bytes of the fixed footer at the end of every segment. */
export const SEGMENT_FOOTER_BYTES = FOOTER_BYTES;
const FILTER_NONE = 0;
const FILTER_KEYS = 1;
/** Values up to this many bytes are copied into the key section (larger ones stay in their block only). */
export const KEY_SECTION_INLINE_BYTES = 64;

/** What the key section says of an entry's value (`d % 4`; a tombstone is `d = 0`). */
export const SECTION_TOMBSTONE = 0;
export const SECTION_KEY_TAIL = 1;
export const SECTION_INLINE = 2;
export const SECTION_IN_BLOCK = 3;

/** Options of `SegmentBuilder`. */
export interface SegmentBuilderOptions {
  /** Write the key section (default: `segmentWriting.keySection`); false writes what versions before it wrote. */
  keySection?: boolean;
}

/**
 * @internal Whether segment builders write the key section by default:
 * tests turn it off to write stores as versions before it did. The
 * library never changes it.
 */
export const segmentWriting = { keySection: true };

/** One block of a segment, as its index lists it. */
export interface SegmentBlockInfo {
  offset: number;
  length: number;
  entries: number;
  firstKey: string;
  lastKey: string;
  /** The block's CRC-32 as the index gives it; absent in a version 1 segment, whose index has none. */
  crc?: number;
}

/**
 * The writers a builder writes into (the segment, and its key section when
 * written), to hand to a later builder: the key section's once `finish`
 * copied it into the segment, the segment's only once the object `finish`
 * returned is stored and its store done with it (see `writeSegments`).
 */
export interface SegmentBuffers {
  readonly body: ByteWriter;
  readonly keys: ByteWriter | undefined;
}

/** Builds one segment from entries added in ascending key order. */
export class SegmentBuilder {
  readonly #w: ByteWriter;
  readonly #blockBytes: number;
  readonly #blocks: SegmentBlockInfo[] = [];
  #blockStart = 0;
  #blockEntries = 0;
  #blockFirst = "";
  #lastKey = "";
  /** Where the last key lies in `#w` when `addBytes` wrote it (no string made yet); -1 when `#lastKey` is it. */
  #lastAt = -1;
  #lastLen = 0;
  #entries = 0;
  /** The key section being written (see the module documentation), or undefined when not written. */
  readonly #keys: ByteWriter | undefined;
  /** Where the previous key's UTF-8 lies in `#w`. */
  #prevAt = 0;
  #prevLen = 0;

  /** `reuse`: buffers of earlier builders nothing reads any more (see `SegmentBuffers`; written over from the start). */
  constructor(blockBytes = 64 * 1024, initialCapacity = 256 * 1024, opts: SegmentBuilderOptions = {}, reuse?: Partial<SegmentBuffers>) {
    this.#blockBytes = blockBytes;
    this.#w = reuse?.body ?? new ByteWriter(initialCapacity);
    this.#w.reset();
    if (opts.keySection ?? segmentWriting.keySection) {
      this.#keys = reuse?.keys ?? new ByteWriter(Math.max(1024, initialCapacity >>> 4));
      this.#keys.reset();
    }
  }

  /** The writers this builder wrote into (see `SegmentBuffers`). */
  get buffers(): SegmentBuffers {
    return { body: this.#w, keys: this.#keys };
  }

  get entries(): number {
    return this.#entries;
  }

  get byteLength(): number {
    return this.#w.pos;
  }

  get firstKey(): string | undefined {
    return this.#blocks[0]?.firstKey ?? (this.#blockEntries > 0 ? this.#blockFirst : undefined);
  }

  get lastKey(): string | undefined {
    return this.#entries > 0 ? this.#lastKeyString() : undefined;
  }

  #lastKeyString(): string {
    if (this.#lastAt >= 0) {
      this.#lastKey = this.#w.buffer.toString("utf8", this.#lastAt, this.#lastAt + this.#lastLen);
      this.#lastAt = -1;
    }
    return this.#lastKey;
  }

  /** Adds an entry; `undefined` writes a tombstone. Keys must ascend strictly. */
  add(key: string, value: Uint8Array | undefined): void {
    if (this.#blockEntries === 0) this.#blockFirst = key;
    const keyLen = this.#w.str(key);
    const at = this.#w.pos - keyLen;
    // The last key before the value: writing it may end the block, whose index lists this key.
    this.#lastKey = key;
    this.#lastAt = -1;
    if (value === undefined) this.#addValue(at, keyLen, undefined, 0, -1);
    else this.#addValue(at, keyLen, value, 0, value.byteLength);
  }

  /**
   * `add` of an entry whose key is already UTF-8, `key[keyFrom..keyFrom+keyLen)`,
   * and whose value is `value[valueAt..valueAt+valueLen)` (`value` undefined:
   * a tombstone): both are copied once, into the segment, and no key string
   * is made but a block's first and last. Writes the same bytes as `add`.
   * `shared`: bytes the key shares with the key added before, at least (0
   * when unknown), which the key section then compares no more.
   */
  addBytes(key: Uint8Array, keyFrom: number, keyLen: number, value: Uint8Array | undefined, valueAt: number, valueLen: number, shared = 0): void {
    const w = this.#w;
    w.varint(keyLen);
    w.ensure(keyLen);
    const at = w.pos;
    const out = w.buffer;
    for (let i = 0; i < keyLen; i++) out[at + i] = key[keyFrom + i]!;
    w.pos = at + keyLen;
    if (this.#blockEntries === 0) this.#blockFirst = out.toString("utf8", at, at + keyLen);
    this.#lastAt = at;
    this.#lastLen = keyLen;
    this.#addValue(at, keyLen, value, valueAt, value === undefined ? -1 : valueLen, shared);
  }

  /** After the key just written at `keyAt` of `#w`: the value (`valueLen` -1: a tombstone), and its key section entry. */
  #addValue(keyAt: number, keyLen: number, value: Uint8Array | undefined, valueAt: number, valueLen: number, shared = 0): void {
    const w = this.#w;
    if (this.#keys !== undefined) this.#addToSection(keyAt, keyLen, value, valueAt, valueLen, shared);
    if (valueLen < 0) w.varint(1);
    else {
      w.varint(valueLen * 2);
      if (valueLen > 0) {
        w.ensure(valueLen);
        copyInto(w.buffer, w.pos, value!, valueAt, valueLen);
        w.pos += valueLen;
      }
    }
    this.#blockEntries++;
    this.#entries++;
    if (w.pos - this.#blockStart >= this.#blockBytes) this.#endBlock();
  }

  /** Adds the key just written at `at` of `#w` (`len` bytes), with what it says of its value (`valueLen` -1: a tombstone), to the key section. */
  #addToSection(at: number, len: number, value: Uint8Array | undefined, valueAt: number, valueLen: number, known: number): void {
    const k = this.#keys!;
    const buf = this.#w.buffer;
    let shared = 0;
    if (this.#entries > 0) {
      const prev = this.#prevAt;
      const n = Math.min(len, this.#prevLen);
      shared = Math.min(known, n);
      while (shared < n && buf[prev + shared] === buf[at + shared]) shared++;
    }
    this.#prevAt = at;
    this.#prevLen = len;
    k.varint(shared);
    k.varint(len - shared);
    k.ensure(len - shared);
    const out = k.buffer;
    for (let i = shared; i < len; i++) out[k.pos++] = buf[at + i]!;
    if (valueLen < 0) k.varint(SECTION_TOMBSTONE);
    else if (isAsciiKeyTail(buf, at, len, value!, valueAt, valueLen)) k.varint(valueLen * 4 + SECTION_KEY_TAIL);
    else if (valueLen <= KEY_SECTION_INLINE_BYTES) {
      k.varint(valueLen * 4 + SECTION_INLINE);
      k.ensure(valueLen);
      const into = k.buffer;
      for (let i = 0; i < valueLen; i++) into[k.pos++] = value![valueAt + i]!;
    } else k.varint(valueLen * 4 + SECTION_IN_BLOCK);
  }

  #endBlock(): void {
    if (this.#blockEntries === 0) return;
    const w = this.#w;
    const crc = crc32(w.bytes().subarray(this.#blockStart, w.pos));
    w.u32(crc);
    this.#blocks.push({
      offset: this.#blockStart,
      length: w.pos - this.#blockStart,
      entries: this.#blockEntries,
      firstKey: this.#blockFirst,
      lastKey: this.#lastKeyString(),
      crc,
    });
    this.#blockStart = w.pos;
    this.#blockEntries = 0;
  }

  /** The blocks written so far (all of them once `finish` ran), as the index lists them. */
  get blocks(): readonly SegmentBlockInfo[] {
    return this.#blocks;
  }

  /** The finished segment's `sum` (its tail checksum, see the module documentation); -1 before `finish`. */
  get sum(): number {
    return this.#sum;
  }
  #sum = -1;

  /** The finished object; the builder must not be used after. */
  finish(): Buffer {
    this.#endBlock();
    const w = this.#w;
    const filterOffset = w.pos;
    const keys = this.#keys;
    if (keys === undefined) {
      w.u8(FILTER_NONE);
      w.varint(0);
    } else {
      w.u8(FILTER_KEYS);
      w.varint(varintBytes(this.#entries) + keys.pos);
      w.varint(this.#entries);
      w.raw(keys.bytes());
    }
    const indexOffset = w.pos;
    w.varint(this.#blocks.length);
    for (const b of this.#blocks) {
      w.varint(b.offset);
      w.varint(b.length);
      w.varint(b.entries);
      w.u32(b.crc!);
      w.str(b.firstKey);
      w.str(b.lastKey);
    }
    const indexLength = w.pos - indexOffset;
    const footer = w.pos;
    w.ensure(FOOTER_BYTES);
    w.pos += FOOTER_BYTES;
    const buf = w.bytes();
    writeU64(buf, footer, filterOffset);
    buf.writeUInt32LE(indexOffset - filterOffset, footer + 8);
    writeU64(buf, footer + 12, indexOffset);
    buf.writeUInt32LE(indexLength, footer + 20);
    writeU64(buf, footer + 24, this.#entries);
    buf.writeUInt16LE(SEGMENT_FORMAT_VERSION, footer + 32);
    buf.writeUInt16LE(0, footer + 34);
    buf.writeUInt32LE(MAGIC, footer + 36);
    this.#sum = crc32(buf.subarray(filterOffset, footer + 40));
    buf.writeUInt32LE(this.#sum, footer + 40);
    return w.finished();
  }
}

/** Up to this many bytes a loop copies a value faster than `set` of a view made for it (about 3 ns a byte against 130 ns a view). */
const LOOP_COPY_BYTES = 16;

/**
 * Copies `src[at..at+n)` to `out[pos..)`. The view is a plain `Uint8Array`:
 * a Buffer's `subarray` makes a Buffer, whose constructor cost a full
 * checkpoint a fifth of its time.
 */
function copyInto(out: Uint8Array, pos: number, src: Uint8Array, at: number, n: number): void {
  if (at === 0 && n === src.byteLength) out.set(src, pos);
  else if (n <= LOOP_COPY_BYTES) for (let i = 0; i < n; i++) out[pos + i] = src[at + i]!;
  else out.set(new Uint8Array(src.buffer, src.byteOffset + at, n), pos);
}

/** Whether `v[vAt..vAt+n)` (at least one byte) equals the last bytes of the key at `buf[at..at+len)`, all ASCII. */
function isAsciiKeyTail(buf: Buffer, at: number, len: number, v: Uint8Array, vAt: number, n: number): boolean {
  if (n === 0 || n > len) return false;
  const from = at + len - n;
  for (let i = 0; i < n; i++) {
    const c = buf[from + i]!;
    if (c >= 0x80 || c !== v[vAt + i]) return false;
  }
  return true;
}

/**
 * Verifies every checksum of a segment and calls `onEntry` for each entry in
 * key order; `undefined` stands for a tombstone. Values are views into
 * `bytes` (see `ByteReader.blob`).
 */
export function readSegment(objectKey: string, bytes: Uint8Array, onEntry: (key: string, value: Uint8Array | undefined) => void): number {
  return readSegmentEntries(objectKey, bytes, (buf, keyAt, keyLen, valueAt, valueLen) => {
    const key = buf.toString("utf8", keyAt, keyAt + keyLen);
    onEntry(key, valueLen < 0 ? undefined : new Uint8Array(buf.buffer, buf.byteOffset + valueAt, valueLen));
  });
}

/**
 * Where an entry of a segment lies in its bytes (`buf`): the key's UTF-8 at
 * `keyAt` (`keyLen` bytes), the value at `valueAt` (`valueLen` bytes, -1 for
 * a tombstone). Positions only: what the caller keeps it copies.
 */
export type RawEntry = (buf: Buffer, keyAt: number, keyLen: number, valueAt: number, valueLen: number) => void;

/**
 * `readSegment` without making a string or a view per entry: verifies every
 * checksum and that keys ascend strictly, and calls `onEntry` with where
 * each entry lies (see `RawEntry`). Returns the number of entries.
 */
export function readSegmentEntries(objectKey: string, bytes: Uint8Array, onEntry: RawEntry): number {
  const buf = asBuffer(bytes);
  const corrupt = (detail: string) => segmentCorrupted(objectKey, detail);
  const f = readFooter(objectKey, buf, 0, buf.length);
  checkFooter(objectKey, buf, 0, f);
  const { filterOffset, indexOffset, entryCount } = f;
  const footer = buf.length - FOOTER_BYTES;
  const crcs = f.version >= 2;
  try {
    const index = new ByteReader(buf, indexOffset, footer);
    const blockCount = index.varint();
    let expectedOffset = 0;
    let total = 0;
    let last = NO_KEY;
    for (let i = 0; i < blockCount; i++) {
      const offset = index.varint();
      const length = index.varint();
      const entries = index.varint();
      const crc = crcs ? index.u32() : -1;
      index.skip(index.varint());
      index.skip(index.varint());
      if (offset !== expectedOffset || length < 4 || offset + length > filterOffset) throw corrupt(`segment block ${i} lies outside the data`);
      // Keys ascend across blocks too: the walk goes on from the previous block's last key.
      last = walkBlock(objectKey, buf, i, offset, length, entries, last, undefined, onEntry, crc);
      expectedOffset = offset + length;
      total += entries;
    }
    if (expectedOffset !== filterOffset) throw corrupt("segment blocks do not cover the data");
    if (total !== entryCount) throw corrupt(`segment holds ${total} entries, its footer says ${entryCount}`);
    return total;
  } catch (err) {
    if (err instanceof DecodeError) throw corrupt(`undecodable segment: ${err.message}`);
    throw err;
  }
}

/** Where a key lies in a segment's bytes; `at` is -1 for none. */
interface KeyAt {
  readonly at: number;
  readonly len: number;
}
const NO_KEY: KeyAt = { at: -1, len: 0 };

/**
 * The one walk over a block's entries, of a whole segment's blocks
 * (`readSegmentEntries`) and of one block read alone (`readBlockEntries`):
 * verifies the block at `buf[offset, offset + length)` against its checksum,
 * that its `entries` keys ascend strictly (after `prev`, the previous
 * block's last key, or from `bounds.firstKey` to `bounds.lastKey` when its
 * index entry is given), that a tombstone carries no value and that no
 * bytes follow the entries, and calls `onEntry` with where each entry lies.
 * `crc`, the block's checksum as its index gives it (-1 when it gives none),
 * must be the one the block ends with. Returns where its last key lies. A
 * `DecodeError` is the caller's to name.
 */
function walkBlock(
  objectKey: string,
  buf: Buffer,
  blockNo: number,
  offset: number,
  length: number,
  entries: number,
  prev: KeyAt,
  bounds: { readonly firstKey: string; readonly lastKey: string } | undefined,
  onEntry: RawEntry,
  crc: number,
): KeyAt {
  const corrupt = (detail: string) => segmentCorrupted(objectKey, detail);
  const end = offset + length - 4;
  const stored = buf.readUInt32LE(end);
  if (crc32(buf.subarray(offset, end)) !== stored) throw corrupt(`segment block ${blockNo} checksum mismatch`);
  // A sound block of another segment, or of another version of this one: its own checksum holds, its index's does not.
  if (crc >= 0 && stored !== crc) throw corrupt(`segment block ${blockNo} is not the block its index lists (their checksums differ)`);
  const r = new ByteReader(buf, offset, end);
  let prevAt = prev.at;
  let prevLen = prev.len;
  for (let e = 0; e < entries; e++) {
    const keyLen = r.varint();
    const keyAt = r.pos;
    r.skip(keyLen);
    // Bytewise, the order of `compareKeys` for the UTF-8 of keys.
    const inOrder =
      e === 0 && bounds !== undefined
        ? buf.toString("utf8", keyAt, keyAt + keyLen) === bounds.firstKey
        : prevAt < 0 || ascends(buf, prevAt, prevLen, keyAt, keyLen);
    if (!inOrder) throw corrupt(`segment keys out of order at block ${blockNo}`);
    prevAt = keyAt;
    prevLen = keyLen;
    const tagged = r.varint();
    if (tagged % 2 === 1) {
      if (tagged !== 1) throw corrupt(`segment tombstone with a value at block ${blockNo}`);
      onEntry(buf, keyAt, keyLen, r.pos, -1);
    } else {
      const valueAt = r.pos;
      r.skip(tagged / 2);
      onEntry(buf, keyAt, keyLen, valueAt, tagged / 2);
    }
  }
  if (bounds !== undefined && (prevAt < 0 || buf.toString("utf8", prevAt, prevAt + prevLen) !== bounds.lastKey)) {
    throw corrupt(`segment block ${blockNo} does not end at the key its index lists`);
  }
  if (r.remaining !== 0) throw corrupt(`segment block ${blockNo} has ${r.remaining} bytes past its entries`);
  return { at: prevAt, len: prevLen };
}

/**
 * Whether the key at `at` (`len` bytes) sorts strictly after the one at
 * `prevAt` (`prevLen` bytes), bytewise: the order of `compareKeys` for the
 * UTF-8 of keys. A loop, not `Buffer.compare`: keys are short, and a call
 * into native code per entry cost more than the comparison.
 */
function ascends(buf: Buffer, prevAt: number, prevLen: number, at: number, len: number): boolean {
  const n = Math.min(prevLen, len);
  for (let i = 0; i < n; i++) {
    const d = buf[at + i]! - buf[prevAt + i]!;
    if (d !== 0) return d > 0;
  }
  return len > prevLen;
}

/** The footer fields of a segment, checked against its size. */
interface Footer {
  filterOffset: number;
  indexOffset: number;
  entryCount: number;
  /** Not yet checked: see `checkFooter`. */
  version: number;
}

/** Reads the footer that ends at `footerEnd` of `buf`, whose byte 0 is byte `bufStart` of a segment of `size` bytes. */
function readFooter(objectKey: string, buf: Buffer, bufStart: number, size: number): Footer {
  const corrupt = (detail: string) => segmentCorrupted(objectKey, detail);
  if (size < FOOTER_BYTES) throw corrupt(`segment is ${size} bytes, shorter than its footer`);
  const footer = size - FOOTER_BYTES - bufStart;
  if (footer < 0) throw corrupt(`segment tail of ${buf.length} bytes holds no footer`);
  if (buf.readUInt32LE(footer + 36) !== MAGIC) throw corrupt("not a segment (bad magic bytes; truncated?)");
  const version = buf.readUInt16LE(footer + 32);
  const filterOffset = readU64(buf, footer);
  const filterLength = buf.readUInt32LE(footer + 8);
  const indexOffset = readU64(buf, footer + 12);
  const indexLength = buf.readUInt32LE(footer + 20);
  if (filterOffset + filterLength !== indexOffset || indexOffset + indexLength !== size - FOOTER_BYTES) {
    throw corrupt("segment footer offsets do not match its size");
  }
  return { filterOffset, indexOffset, entryCount: readU64(buf, footer + 24), version };
}

/**
 * Checks the tail checksum, which covers filter, index and footer (version
 * included), then the version: a version is trusted only under a checksum
 * that holds, so a flipped bit in it reads as damage, not as a newer taquba.
 * Every format version keeps this footer envelope (see docs/engine.md).
 */
function checkFooter(objectKey: string, buf: Buffer, bufStart: number, f: Footer): void {
  const footer = buf.length - FOOTER_BYTES;
  if (crc32(buf.subarray(f.filterOffset - bufStart, footer + 40)) !== buf.readUInt32LE(footer + 40)) {
    throw segmentCorrupted(objectKey, "segment index checksum mismatch");
  }
  if (f.version > SEGMENT_FORMAT_VERSION) throw new UnsupportedFormatError(objectKey, f.version, SEGMENT_FORMAT_VERSION);
  if (f.version < 1) throw segmentCorrupted(objectKey, `segment footer names format version ${f.version}, which no taquba writes`);
}

/**
 * Where the filter and index of a segment of `size` bytes begin, read from
 * its tail: `tail` holds the segment's last `tail.byteLength` bytes (at
 * least the footer). A reader that holds less than from that offset reads
 * the rest and calls `decodeSegmentIndex`, which checks the checksum and
 * the version; a tail that already holds them is checked here.
 */
export function segmentIndexStart(objectKey: string, tail: Uint8Array, size: number): number {
  const buf = asBuffer(tail);
  const start = size - buf.length;
  const f = readFooter(objectKey, buf, start, size);
  if (f.filterOffset >= start) checkFooter(objectKey, buf, start, f);
  return f.filterOffset;
}

/**
 * The block index of a segment of `size` bytes from `tail`, its last bytes
 * from the offset `segmentIndexStart` returned (or earlier): verifies the
 * checksum of filter, index and footer, and that the blocks tile the data in
 * ascending key order with `entryCount` entries in all.
 */
export function decodeSegmentIndex(objectKey: string, tail: Uint8Array, size: number): SegmentBlockInfo[] {
  const buf = asBuffer(tail);
  const start = size - buf.length;
  const corrupt = (detail: string) => segmentCorrupted(objectKey, detail);
  const f = readFooter(objectKey, buf, start, size);
  if (f.filterOffset < start) throw corrupt("segment index lies outside the bytes read");
  const footer = size - FOOTER_BYTES - start;
  checkFooter(objectKey, buf, start, f);
  try {
    const index = new ByteReader(buf, f.indexOffset - start, footer);
    const blockCount = index.varint();
    const blocks: SegmentBlockInfo[] = [];
    let expectedOffset = 0;
    let total = 0;
    const crcs = f.version >= 2;
    for (let i = 0; i < blockCount; i++) {
      const offset = index.varint();
      const length = index.varint();
      const entries = index.varint();
      const crc = crcs ? index.u32() : -1;
      const firstKey = index.str();
      const lastKey = index.str();
      if (offset !== expectedOffset || length < 4 || offset + length > f.filterOffset) throw corrupt(`segment block ${i} lies outside the data`);
      if (entries < 1 || compareKeys(firstKey, lastKey) > 0 || (i > 0 && compareKeys(blocks[i - 1]!.lastKey, firstKey) >= 0)) {
        throw corrupt(`segment index entry ${i} is out of order`);
      }
      blocks.push(crc < 0 ? { offset, length, entries, firstKey, lastKey } : { offset, length, entries, firstKey, lastKey, crc });
      expectedOffset = offset + length;
      total += entries;
    }
    if (index.remaining !== 0) throw corrupt(`segment index has ${index.remaining} bytes past its entries`);
    if (expectedOffset !== f.filterOffset) throw corrupt("segment blocks do not cover the data");
    if (total !== f.entryCount) throw corrupt(`segment index lists ${total} entries, its footer says ${f.entryCount}`);
    return blocks;
  } catch (err) {
    if (err instanceof DecodeError) throw corrupt(`undecodable segment index: ${err.message}`);
    throw err;
  }
}

/**
 * Verifies one block (`bytes`, exactly as `info` locates it) against its
 * checksum and its index entry, and calls `onEntry` for each entry in key
 * order; `undefined` stands for a tombstone. Values are views into `bytes`.
 * `readBlockEntries` with a string and a view per entry, as `readSegment`
 * is `readSegmentEntries`.
 */
export function decodeBlock(
  objectKey: string,
  blockNo: number,
  info: SegmentBlockInfo,
  bytes: Uint8Array,
  onEntry: (key: string, value: Uint8Array | undefined) => void,
): void {
  readBlockEntries(objectKey, blockNo, info, bytes, (buf, keyAt, keyLen, valueAt, valueLen) => {
    onEntry(buf.toString("utf8", keyAt, keyAt + keyLen), valueLen < 0 ? undefined : new Uint8Array(buf.buffer, buf.byteOffset + valueAt, valueLen));
  });
}

/**
 * `decodeBlock` without a string or a view per entry: verifies one block
 * (`bytes`, exactly as `info` locates it) against its checksum and its index
 * entry (entry count, first and last key, keys ascending) and calls `onEntry`
 * with where each entry lies in `bytes` (see `RawEntry`).
 */
export function readBlockEntries(objectKey: string, blockNo: number, info: SegmentBlockInfo, bytes: Uint8Array, onEntry: RawEntry): void {
  const buf = asBuffer(bytes);
  const corrupt = (detail: string) => segmentCorrupted(objectKey, detail);
  if (buf.length !== info.length) throw corrupt(`segment block ${blockNo} is ${buf.length} bytes, its index says ${info.length}`);
  try {
    walkBlock(objectKey, buf, blockNo, 0, info.length, info.entries, NO_KEY, info, onEntry, info.crc ?? -1);
  } catch (err) {
    if (err instanceof DecodeError) throw corrupt(`undecodable segment block ${blockNo}: ${err.message}`);
    throw err;
  }
}

/** A segment's tail as `decodeSegmentTail` reads it: its block index and, when it has one, where its key section lies. */
export interface SegmentTail {
  blocks: SegmentBlockInfo[];
  entryCount: number;
  /** The tail checksum: from version 2 on it covers every block through the index (see the module documentation). */
  sum: number;
  /** The segment's format version (checked). */
  version: number;
  /** The key section's entries: `buf[start..end)`, `count` of them; undefined for a segment without one. */
  keys: { buf: Buffer; count: number; start: number; end: number } | undefined;
}

/**
 * The block index and key section of a segment of `size` bytes, from `tail`
 * (its last bytes from the offset `segmentIndexStart` returned, or earlier):
 * verifies what `decodeSegmentIndex` verifies (one checksum covers filter
 * slot, index and footer), and that a key section counts the footer's
 * entries. A filter slot of another kind is no key section.
 */
export function decodeSegmentTail(objectKey: string, tail: Uint8Array, size: number): SegmentTail {
  const blocks = decodeSegmentIndex(objectKey, tail, size);
  const buf = asBuffer(tail);
  const start = size - buf.length;
  const f = readFooter(objectKey, buf, start, size);
  const corrupt = (detail: string) => segmentCorrupted(objectKey, detail);
  const r = new ByteReader(buf, f.filterOffset - start, f.indexOffset - start);
  const sum = buf.readUInt32LE(buf.length - 4);
  const known = { blocks, entryCount: f.entryCount, sum, version: f.version };
  if (r.remaining === 0 || buf[r.pos] !== FILTER_KEYS) return { ...known, keys: undefined };
  try {
    r.u8();
    const length = r.varint();
    if (length !== r.remaining) throw corrupt(`segment key section says ${length} bytes, its slot holds ${r.remaining}`);
    const count = r.varint();
    if (count !== f.entryCount) throw corrupt(`segment key section lists ${count} entries, its footer says ${f.entryCount}`);
    return { ...known, keys: { buf, count, start: r.pos, end: r.end } };
  } catch (err) {
    if (err instanceof DecodeError) throw corrupt(`undecodable segment key section: ${err.message}`);
    throw err;
  }
}

/**
 * One entry of a key section: its key's UTF-8 in `key[0..keyLen)` (a buffer
 * reused for the next entry), what the section says of its value (`kind`,
 * one of the `SECTION_` constants), the value's length (-1 for a
 * tombstone), and for `SECTION_INLINE` where its bytes lie in `section`
 * (for `SECTION_KEY_TAIL` they are the key's last `valueLen` bytes), and
 * the bytes the key shares with the previous one (checked: exactly that).
 */
export type SectionEntry = (key: Buffer, keyLen: number, kind: number, valueLen: number, section: Buffer, valueAt: number, shared: number) => void;

/**
 * Walks the key section of `tail` (which must have one), calling `onEntry`
 * per entry in key order, and checks that it agrees with the block index:
 * keys ascend strictly (front-coded by their longest shared prefix), each
 * block's first and last keys are the section's entries at that block's
 * bounds, and each block is exactly as long as its entries, from the key and
 * value lengths the section gives, would make it. Anything else is
 * `StoreCorruptedError` naming the segment; entries before the damage have
 * been passed to `onEntry` by then.
 */
export function readKeySection(objectKey: string, tail: SegmentTail, onEntry: SectionEntry): void {
  const c = new KeySectionCursor(objectKey, tail, sectionKey);
  while (c.next()) onEntry(c.key, c.keyLen, c.kind, c.valueLen, c.section, c.valueAt, c.shared);
  // Keep a key buffer the cursor had to grow for the next walk.
  sectionKey = c.key;
}

/** The key buffer `readKeySection` lends its cursor (reused walk after walk). */
let sectionKey: Buffer = Buffer.allocUnsafe(256);

/**
 * The entries of a key section one at a time, with every check
 * `readKeySection` describes (it walks one of these): `next()` decodes the
 * next entry into the fields (the same meanings as `SectionEntry`'s
 * arguments; `key` is reused for the next entry) and returns false after the
 * last, once the section is checked to end there. Open's merge of segment
 * runs pulls several sections at once, in key order.
 */
export class KeySectionCursor {
  /** The entry's key in `key[0..keyLen)`. */
  key: Buffer;
  keyLen = 0;
  kind = 0;
  /** -1 for a tombstone. */
  valueLen = 0;
  /** The section's bytes, where a `SECTION_INLINE` value lies at `valueAt`. */
  readonly section: Buffer;
  valueAt = 0;
  /** Bytes the key shares with the previous one. */
  shared = 0;
  /** Entries decoded so far. */
  #i = 0;
  #b = 0;
  #inBlock = 0;
  #blockBytes = 0;
  readonly #r: ByteReader;
  readonly #count: number;
  readonly #blocks: SegmentBlockInfo[];
  readonly #objectKey: string;

  constructor(objectKey: string, tail: SegmentTail, key: Buffer = Buffer.allocUnsafe(256)) {
    const keys = tail.keys!;
    this.#objectKey = objectKey;
    this.section = keys.buf;
    this.#r = new ByteReader(keys.buf, keys.start, keys.end);
    this.#count = keys.count;
    this.#blocks = tail.blocks;
    this.key = key;
  }

  /** Decodes the next entry; false after the last. */
  next(): boolean {
    try {
      return this.#next();
    } catch (err) {
      if (err instanceof DecodeError) throw this.#corrupt(`undecodable segment key section: ${err.message}`);
      throw err;
    }
  }

  #corrupt(detail: string): StoreCorruptedError {
    return segmentCorrupted(this.#objectKey, detail);
  }

  #next(): boolean {
    const r = this.#r;
    const i = this.#i;
    if (i >= this.#count) {
      if (r.remaining !== 0) throw this.#corrupt(`segment key section has ${r.remaining} bytes past its entries`);
      return false;
    }
    const buf = this.section;
    const end = r.end;
    let key = this.key;
    const keyLen0 = this.keyLen;
    const shared = r.varint();
    const suffix = r.varint();
    let pos = r.pos;
    if (pos + suffix > end) throw new DecodeError(`truncated: a key suffix of ${suffix} bytes at offset ${pos}`);
    // Strictly after the previous key: it shares exactly `shared` bytes, then is greater.
    if (shared > keyLen0 || (i > 0 && (suffix === 0 || (shared < keyLen0 && buf[pos]! <= key[shared]!)))) {
      throw this.#corrupt(`segment key section out of order at entry ${i}`);
    }
    if (key.length < shared + suffix) {
      const grown = Buffer.allocUnsafe((shared + suffix) * 2);
      key.copy(grown, 0, 0, shared);
      this.key = key = grown;
    }
    for (let j = 0; j < suffix; j++) key[shared + j] = buf[pos + j]!;
    const keyLen = shared + suffix;
    r.pos = pos + suffix;
    const d = r.varint();
    const kind = d % 4;
    let valueLen = (d - kind) / 4;
    pos = r.pos;
    if (d === SECTION_TOMBSTONE) valueLen = -1;
    else if (kind === SECTION_TOMBSTONE) throw this.#corrupt(`segment key section has an undefined value descriptor ${d} at entry ${i}`);
    else if (kind === SECTION_KEY_TAIL) {
      if (valueLen < 1 || valueLen > keyLen)
        throw this.#corrupt(`segment key section has a key tail of ${valueLen} bytes for a key of ${keyLen} at entry ${i}`);
      for (let j = keyLen - valueLen; j < keyLen; j++)
        if (key[j]! >= 0x80) throw this.#corrupt(`segment key section has a key tail that is not ASCII at entry ${i}`);
    } else if (kind === SECTION_INLINE) {
      if (pos + valueLen > end) throw new DecodeError(`truncated: an inline value of ${valueLen} bytes at offset ${pos}`);
      r.pos = pos + valueLen;
    }
    const b = this.#b;
    const info = this.#blocks[b]!;
    if (this.#inBlock === 0 && !sameKey(key, keyLen, info.firstKey)) throw this.#corrupt(`segment key section disagrees with the first key of block ${b}`);
    this.#blockBytes += varintBytes(keyLen) + keyLen + (valueLen < 0 ? 1 : varintBytes(valueLen * 2) + valueLen);
    if (++this.#inBlock === info.entries) {
      if (!sameKey(key, keyLen, info.lastKey)) throw this.#corrupt(`segment key section disagrees with the last key of block ${b}`);
      if (this.#blockBytes + 4 !== info.length)
        throw this.#corrupt(`segment key section gives block ${b} ${this.#blockBytes + 4} bytes, its index ${info.length}`);
      this.#b = b + 1;
      this.#inBlock = 0;
      this.#blockBytes = 0;
    }
    this.#i = i + 1;
    this.keyLen = keyLen;
    this.kind = kind;
    this.valueLen = valueLen;
    this.valueAt = pos;
    this.shared = shared;
    return true;
  }
}

/** Whether `key[0..len)` is the UTF-8 of `s`. */
function sameKey(key: Buffer, len: number, s: string): boolean {
  if (s.length > len || s.length * 3 < len) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return key.toString("utf8", 0, len) === s;
    if (key[i] !== c) return false;
  }
  return s.length === len;
}
