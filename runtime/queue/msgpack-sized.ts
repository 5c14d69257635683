/**
 * @module MessagePack's sized headers, written into any array at any
 * position: an unsigned integer or a length in the shortest of its 8, 16
 * and 32-bit forms (big-endian after the tag). The job record's direct
 * encoder and the stats record's writer share these, so both write exactly
 * the bytes the general encoder writes.
 */

/** The tags of a header's 8, 16 and 32-bit forms. */
export type SizedTags = readonly [number, number, number];

/** Unsigned integers: uint 8, 16 and 32. */
export const UINT_TAGS: SizedTags = [0xcc, 0xcd, 0xce];
/** String lengths past a fixstr: str 8, 16 and 32. */
export const STR_TAGS: SizedTags = [0xd9, 0xda, 0xdb];
/** Byte-array lengths: bin 8, 16 and 32. */
export const BIN_TAGS: SizedTags = [0xc4, 0xc5, 0xc6];

/** Bytes `writeSized` takes for `n` (a whole number in [0, 2^32)). */
function sizedBytes(n: number): number {
  return n < 0x100 ? 2 : n < 0x1_0000 ? 3 : 5;
}

/** Writes `n` (a whole number in [0, 2^32)) behind the shortest of `tags` at `out[pos]`; returns the position after it. */
export function writeSized(out: Uint8Array, pos: number, n: number, tags: SizedTags): number {
  if (n < 0x100) {
    out[pos] = tags[0];
    out[pos + 1] = n;
    return pos + 2;
  }
  if (n < 0x1_0000) {
    out[pos] = tags[1];
    out[pos + 1] = n >>> 8;
    out[pos + 2] = n & 0xff;
    return pos + 3;
  }
  out[pos] = tags[2];
  out[pos + 1] = n >>> 24;
  out[pos + 2] = (n >>> 16) & 0xff;
  out[pos + 3] = (n >>> 8) & 0xff;
  out[pos + 4] = n & 0xff;
  return pos + 5;
}

/** Bytes `writeUint` takes for `v` (a whole number in [0, 2^32)). */
export function uintBytes(v: number): number {
  return v < 0x80 ? 1 : sizedBytes(v);
}

/** Writes `v` (a whole number in [0, 2^32)) as an unsigned integer in its shortest form (a positive fixint below 128) at `out[pos]`; returns the position after it. */
export function writeUint(out: Uint8Array, pos: number, v: number): number {
  if (v < 0x80) {
    out[pos] = v;
    return pos + 1;
  }
  return writeSized(out, pos, v, UINT_TAGS);
}
