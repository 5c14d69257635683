/**
 * @module A store that checksums every body handed to its put, then hands
 * it straight on: the engine tests that hold the engine to its put-body
 * contract check each body against its checksum after the work.
 */
import type { MemoryStore, ObjectStore, PutOptions } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { passPutBodyReleased } from "../../runtime/store/put-body.js";

/** One body put, kept by reference, with its checksum at the put. */
export interface ChecksummedPut {
  key: string;
  body: Uint8Array;
  crc: number;
}

/** Hands each body straight to `inner` after checksumming it; declared done with bodies as `inner` is. */
export function checksumming(inner: MemoryStore): { store: ObjectStore; puts: ChecksummedPut[] } {
  const puts: ChecksummedPut[] = [];
  const store: ObjectStore = {
    get: (k) => inner.get(k),
    getRange: (k, o, l) => inner.getRange(k, o, l),
    put(key: string, body: Uint8Array, opts?: PutOptions) {
      puts.push({ key, body, crc: crc32(body) });
      return inner.put(key, body, opts);
    },
    delete: (k) => inner.delete(k),
    list: (p, o) => inner.list(p, o),
  };
  passPutBodyReleased(inner, store);
  return { store, puts };
}
