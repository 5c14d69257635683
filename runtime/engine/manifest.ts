/**
 * @module The manifest: the numbered root object that names the writer epoch,
 * the segments holding the checkpointed state, and where WAL replay starts.
 *
 * Layout: `"TQMF"`, u16 format version, u16 flags, u32 CRC-32 of the body,
 * then the body as MessagePack.
 *
 * Segments come in runs. Every segment names the run it belongs to (the id
 * of the manifest whose checkpoint wrote it); the list holds runs in
 * ascending run order, and within a run, segments with disjoint, ascending
 * key ranges. The oldest run is a full snapshot (a full checkpoint writes
 * one run and drops the others); each later run holds only the keys changed
 * since the run before it, with tombstones for deleted keys, and wins over
 * every older run. Version 1 (one snapshot, no `run` field) reads as run 0.
 * Versions 1 and 2 checksum the body; a later version must checksum the
 * header's first 8 bytes (magic, version, flags) and the body, so that a
 * store written by a newer format fails with `UnsupportedFormatError` and a
 * flipped bit in the version field with `StoreCorruptedError`. Version 3
 * does, and adds each segment's `sum` (segment-format.ts): a segment written
 * by an earlier version, carried over from an earlier manifest, has none and
 * is checked as before.
 */
import { crc32 } from "./checksum.js";
import { pack } from "msgpackr";
import { assertPlainMessagePack } from "./plain-messagepack.js";
import { decodeDefining } from "./defining-decode.js";
import { StoreCorruptedError } from "../errors.js";
import { decodedWithOwnFields, lastOf, ownFieldsIfPolluted, prototypeHoldsAny, prototypesHoldAnIndex } from "../own-fields.js";
import { unpackrWithOwnLayouts } from "../own-layouts.js";
import { asBuffer } from "./byte-io.js";
import { UnsupportedFormatError } from "./format-error.js";

/** The manifest format this engine writes; it reads this and older. */
export const MANIFEST_FORMAT_VERSION = 3;
const MAGIC = 0x464d5154; // "TQMF" read as little-endian u32
const HEADER_BYTES = 12;
/** msgpackr's own `unpack`, with record layouts no prototype can supply (own-layouts.ts). */
const unpackr = unpackrWithOwnLayouts({ useRecords: false, mapsAsObjects: true });

/** A segment listed by a manifest. `name` is relative to the engine prefix. */
export interface SegmentRef {
  name: string;
  bytes: number;
  entries: number;
  firstKey: string;
  lastKey: string;
  /** The run this segment belongs to: the id of the manifest that first listed it. */
  run: number;
  /**
   * The segment's tail checksum, which covers every byte of a segment of
   * format version 2 or later (segment-format.ts): a read of it is checked
   * against this. Absent for segments written before manifest version 3.
   */
  sum?: number;
}

/** A decoded manifest. */
export interface Manifest {
  /** This manifest's own number (its key is `manifest/<id>`). */
  id: number;
  /** The epoch of the writer that wrote it. Opening a writer bumps it. */
  epoch: number;
  /** First WAL sequence number not covered by `segments`; replay starts here. */
  walNext: number;
  segments: SegmentRef[];
  /**
   * Sequence numbers of fence markers. They are never deleted, so that a
   * paused, fenced writer can never land a put at that sequence later.
   */
  fences: number[];
  /** Wall-clock time of writing, for people reading the store. */
  createdAt: number;
  /**
   * The highest segment number its writer epoch had taken when it was
   * published (0 for a writer's first manifest): every segment of that epoch
   * numbered up to it was written before this manifest, so one it does not
   * list is garbage. Absent in manifests of earlier versions.
   */
  lastSegment?: number;
  /**
   * A random id of the open that wrote this manifest as its claim. Two opens
   * claiming the same number from the same base in the same millisecond
   * would otherwise write the same bytes, and the one whose put lost would
   * take the other's for its own retried put and open too. Absent in other
   * manifests, and ignored by versions that do not know it.
   */
  opener?: string;
}

/** The state of a store no writer has opened yet. */
export function emptyManifest(): Manifest {
  return { id: 0, epoch: 0, walNext: 1, segments: [], fences: [], createdAt: 0 };
}

/** The stored form of `m`: header, checksum, MessagePack body. */
export function encodeManifest(m: Manifest): Buffer {
  const body = pack({
    id: m.id,
    epoch: m.epoch,
    walNext: m.walNext,
    segments: m.segments,
    fences: m.fences,
    createdAt: m.createdAt,
    ...(m.lastSegment === undefined ? {} : { lastSegment: m.lastSegment }),
    ...(m.opener === undefined ? {} : { opener: m.opener }),
  });
  const out = Buffer.allocUnsafe(HEADER_BYTES + body.length);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt16LE(MANIFEST_FORMAT_VERSION, 4);
  out.writeUInt16LE(0, 6);
  body.copy(out, HEADER_BYTES);
  out.writeUInt32LE(manifestChecksum(out, MANIFEST_FORMAT_VERSION), 8);
  return out;
}

/** A manifest's fields and a segment's: each made the decoded map's own while `Object.prototype` holds its name, so an absent one reads as absent. */
const MANIFEST_FIELDS: readonly (keyof Manifest)[] = ["id", "epoch", "walNext", "segments", "fences", "createdAt", "lastSegment", "opener"];
const SEGMENT_FIELDS: readonly (keyof SegmentRef)[] = ["name", "bytes", "entries", "firstKey", "lastKey", "run", "sum"];

const isNat = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/** The checksum a manifest of `version` carries in `bytes` (header and body): the body's, or from version 3 the first 8 header bytes' and the body's. */
function manifestChecksum(bytes: Buffer, version: number): number {
  const body = bytes.subarray(HEADER_BYTES);
  return version < 3 ? crc32(body) : crc32(body, crc32(bytes.subarray(0, 8)));
}

/**
 * Decodes manifest number `expectedId` after checking its magic, version and
 * checksum; `StoreCorruptedError` or `UnsupportedFormatError` otherwise.
 */
export function decodeManifest(objectKey: string, bytes: Uint8Array, expectedId: number): Manifest {
  const buf = asBuffer(bytes);
  const corrupt = (detail: string) => new StoreCorruptedError(objectKey, detail);
  if (buf.length < HEADER_BYTES) throw corrupt(`manifest is ${buf.length} bytes, shorter than its header`);
  if (buf.readUInt32LE(0) !== MAGIC) throw corrupt("not a manifest (bad magic bytes)");
  const version = buf.readUInt16LE(4);
  const body = buf.subarray(HEADER_BYTES);
  if (version > MANIFEST_FORMAT_VERSION) {
    // Versions 1 and 2 checksum the body only; every later one must checksum the first 8 header bytes and the body,
    // so that a version is trusted only under a checksum that holds (a flipped bit in it is damage, not a newer taquba).
    if (manifestChecksum(buf, version) !== buf.readUInt32LE(8)) {
      throw corrupt(`manifest checksum mismatch (truncated or altered; its format version field reads ${version})`);
    }
    throw new UnsupportedFormatError(objectKey, version, MANIFEST_FORMAT_VERSION);
  }
  if (version < 1) throw corrupt(`manifest names format version ${version}, which no taquba writes`);
  if (manifestChecksum(buf, version) !== buf.readUInt32LE(8)) throw corrupt("manifest checksum mismatch (truncated or altered)");
  let raw: unknown;
  try {
    const entries = assertPlainMessagePack(body);
    // Defining each field at once while Object.prototype holds a field's name, so that no setter of it is called with the field.
    raw =
      prototypeHoldsAny(MANIFEST_FIELDS) || prototypeHoldsAny(SEGMENT_FIELDS) || prototypesHoldAnIndex()
        ? decodeDefining(body)
        : decodedWithOwnFields(
            entries,
            () => unpackr.unpack(body),
            () => decodeDefining(body),
          );
  } catch (err) {
    throw corrupt(`undecodable manifest: ${err instanceof Error ? err.message : String(err)}`);
  }
  const m = raw as Partial<Manifest> | null;
  if (m !== null && typeof m === "object") {
    ownFieldsIfPolluted(m, MANIFEST_FIELDS);
    if (Array.isArray(m.segments)) for (const s of m.segments as unknown[]) if (s !== null && typeof s === "object") ownFieldsIfPolluted(s, SEGMENT_FIELDS);
  }
  const segmentsOk =
    Array.isArray(m?.segments) &&
    m.segments.every(
      (s) =>
        typeof s === "object" &&
        s !== null &&
        typeof s.name === "string" &&
        isNat(s.bytes) &&
        isNat(s.entries) &&
        typeof s.firstKey === "string" &&
        typeof s.lastKey === "string" &&
        (version < 2 ? s.run === undefined : isNat(s.run)) &&
        (s.sum === undefined || (version >= 3 && isNat(s.sum) && s.sum <= 0xffffffff)),
    );
  if (
    !m ||
    !isNat(m.id) ||
    !isNat(m.epoch) ||
    !isNat(m.walNext) ||
    !segmentsOk ||
    !Array.isArray(m.fences) ||
    !m.fences.every(isNat) ||
    typeof m.createdAt !== "number" ||
    (m.lastSegment !== undefined && !isNat(m.lastSegment)) ||
    (m.opener !== undefined && typeof m.opener !== "string")
  ) {
    throw corrupt("manifest fields are missing or malformed");
  }
  if (m.id !== expectedId) throw corrupt(`manifest claims number ${m.id} but is stored as ${expectedId}`);
  const segments = m.segments as SegmentRef[];
  if (version < 2) for (const s of segments) s.run = 0;
  for (let i = 1; i < segments.length; i++) {
    if (segments[i]!.run < segments[i - 1]!.run) throw corrupt("manifest segment runs are out of order");
  }
  return m as Manifest;
}

/** The segments of `m` grouped by run, oldest run first. */
export function segmentRuns(m: Manifest): SegmentRef[][] {
  const runs: SegmentRef[][] = [];
  for (const s of m.segments) {
    // By the length: an empty list's [-1] is whatever a prototype holds there (a list there took the segment).
    const last = lastOf(runs);
    if (last !== undefined && last[0]!.run === s.run) last.push(s);
    else runs.push([s]);
  }
  return runs;
}
