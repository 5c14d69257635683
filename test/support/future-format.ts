/**
 * Stored objects as a newer taquba would write them: the format version
 * raised and the checksum recomputed the way every later version must (a
 * version is trusted only under a checksum that holds).
 */
import { crc32 } from "../../runtime/engine/checksum.js";

/** A copy of manifest `bytes` with format `version`, its checksum over header bytes 0-8 and the body. */
export function futureManifest(bytes: Uint8Array, version: number): Uint8Array {
  const b = Buffer.from(bytes);
  b.writeUInt16LE(version, 4);
  b.writeUInt32LE(crc32(Buffer.concat([b.subarray(0, 8), b.subarray(12)])), 8);
  return b;
}

/** A copy of segment `bytes` with footer format `version` and its tail checksum recomputed. */
export function futureSegment(bytes: Uint8Array, version: number): Uint8Array {
  const b = Buffer.from(bytes);
  const footer = b.length - 44;
  b.writeUInt16LE(version, footer + 32);
  const filterOffset = Number(b.readBigUInt64LE(footer));
  b.writeUInt32LE(crc32(b.subarray(filterOffset, footer + 40)), footer + 40);
  return b;
}
