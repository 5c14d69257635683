/**
 * @module What a group retention marker holds: the group id as UTF-8 text
 * for a group kept on one store, or the byte 0xff and a MessagePack map
 * naming the part of a group spanning shards (its id, creation time, and
 * whether this store removes the manifest). 0xff never occurs in UTF-8, so
 * the two never mix up, and markers written before parts existed read as
 * they always did.
 */
import { StoreCorruptedError } from "../../errors.js";
import { encodeValue, fromUtf8 } from "../records/codec.js";
import { decodeMap } from "../records/records.js";
import type { GroupPart } from "./run-group.js";

/** A marker: the group, and its part when the group spans shards. */
export interface RetainedGroup {
  readonly groupId: string;
  readonly part?: GroupPart;
}

const PART = 0xff;

export function encodeRetainedPart(groupId: string, part: GroupPart): Uint8Array {
  const map = encodeValue({ groupId, createdAtMs: part.createdAtMs, manifest: part.manifest });
  const out = new Uint8Array(map.length + 1);
  out[0] = PART;
  out.set(map, 1);
  return out;
}

export function decodeRetained(value: Uint8Array, key: string): RetainedGroup {
  if (value[0] !== PART) return { groupId: fromUtf8(value) };
  const m = decodeMap(value.subarray(1), key, "group retention marker");
  if (typeof m.groupId !== "string" || typeof m.createdAtMs !== "number" || !Number.isFinite(m.createdAtMs) || typeof m.manifest !== "boolean") {
    throw new StoreCorruptedError(key, "group retention marker lacks its group id, creation time or manifest flag");
  }
  return { groupId: m.groupId, part: { createdAtMs: m.createdAtMs, manifest: m.manifest } };
}
