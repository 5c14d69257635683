/**
 * @module CRC-32 (IEEE) for the engine's formats: `node:zlib`'s native
 * `crc32` where present (Node 20.15 and later), else a table-driven version
 * that gives the same values, so the package still runs on earlier Node 20.
 */
import * as zlib from "node:zlib";

type Crc32 = (data: Uint8Array, initial?: number) => number;

let table: Uint32Array | undefined;

function portableCrc32(data: Uint8Array, initial = 0): number {
  if (table === undefined) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = (initial ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const native = (zlib as { crc32?: Crc32 }).crc32;

/** CRC-32 of `data`, continuing from `initial`. */
export const crc32: Crc32 = typeof native === "function" ? native : portableCrc32;

/** The portable version, exported so tests can check it agrees with the native one. */
export { portableCrc32 };
