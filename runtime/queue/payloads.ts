/**
 * @module Offloaded payloads: payloads above the threshold live in their own
 * objects under `payloads/<ulid>` in the queue's store view.
 *
 * Invariant: the object is written before the record that references it
 * and deleted only after the commit removing that record is durable, so a
 * crash can orphan an object but never leave a record without its payload.
 *
 * An object is the payload followed by a trailer: its CRC-32 and a magic
 * number, checked on every read as the WAL and segments are, so a damaged
 * object is refused instead of handed to a worker. Objects written before
 * the trailer existed are exactly the record's payload size and read as is.
 */
import { crc32 } from "../engine/checksum.js";
import type { ObjectStore } from "../store/object-store.js";
import { StoreCorruptedError, StoreUnavailableError, TaqubaError } from "../errors.js";
import { PayloadMissingError } from "./errors.js";

/** Where offloaded payloads live in the queue's store view. */
export const PAYLOAD_PREFIX = "payloads/";

const TRAILER_MAGIC = 0x31505154; // "TQP1", little-endian
const TRAILER_BYTES = 8;

/** The stored form of `payload`: the bytes, their CRC-32, the magic number. */
export function framePayload(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.byteLength + TRAILER_BYTES);
  out.set(payload);
  const view = new DataView(out.buffer, out.byteOffset + payload.byteLength, TRAILER_BYTES);
  view.setUint32(0, crc32(payload), true);
  view.setUint32(4, TRAILER_MAGIC, true);
  return out;
}

/**
 * The payload in a stored object, checked. `size` is the payload size the
 * job record holds (absent on records that predate it).
 */
export function unframePayload(objectKey: string, jobId: string, body: Uint8Array, size: number | undefined): Uint8Array {
  // An object from before the trailer: exactly the recorded size, nothing to check.
  if (size !== undefined && body.byteLength === size) return body;
  const fail = (why: string) => new StoreCorruptedError(objectKey, `the payload of job ${jobId}: ${why}`);
  if (size !== undefined && body.byteLength !== size + TRAILER_BYTES) {
    throw fail(`${body.byteLength} bytes where ${size} (+${TRAILER_BYTES} checksum) were written`);
  }
  if (body.byteLength < TRAILER_BYTES) {
    if (size === undefined) return body;
    throw fail("shorter than its checksum");
  }
  const end = body.byteLength - TRAILER_BYTES;
  const view = new DataView(body.buffer, body.byteOffset + end, TRAILER_BYTES);
  if (view.getUint32(4, true) !== TRAILER_MAGIC) {
    if (size === undefined) return body;
    throw fail("checksum trailer missing");
  }
  const payload = body.subarray(0, end);
  if (crc32(payload) !== view.getUint32(0, true)) throw fail("checksum mismatch (altered or truncated)");
  return payload;
}

/** Reads, writes and deletes offloaded payload objects. */
export class PayloadStore {
  constructor(
    readonly store: ObjectStore,
    /** Offload payloads larger than this; `null` never offloads. */
    readonly threshold: number | null,
  ) {}

  shouldOffload(payload: Uint8Array): boolean {
    return this.threshold !== null && payload.byteLength > this.threshold;
  }

  async write(ref: string, payload: Uint8Array): Promise<void> {
    await this.store.put(PAYLOAD_PREFIX + ref, framePayload(payload), { ifNoneMatch: "*" });
  }

  /** The checked payload of job `jobId`; `size` is the payload size its record holds. */
  async read(jobId: string, ref: string, size?: number): Promise<Uint8Array> {
    let o;
    try {
      o = await this.store.get(PAYLOAD_PREFIX + ref);
    } catch (err) {
      throw err instanceof TaqubaError ? err : new StoreUnavailableError("get", PAYLOAD_PREFIX + ref, err);
    }
    if (o === null) throw new PayloadMissingError(jobId, PAYLOAD_PREFIX + ref);
    return unframePayload(PAYLOAD_PREFIX + ref, jobId, o.body, size);
  }

  /** Deletes objects; failures leave orphans (never dangling records), so they are swallowed. */
  async deleteAll(refs: Iterable<string>): Promise<void> {
    await Promise.all([...refs].map((r) => this.store.delete(PAYLOAD_PREFIX + r).catch(() => undefined)));
  }

  /**
   * Deletes payload objects no record refers to: left by a crash between
   * writing the object and committing its record. `referenced(ref)` must
   * answer from durable state (the caller flushes first).
   */
  async sweepOrphans(isCandidate: (ref: string) => boolean, confirm: () => Promise<void>, stillOrphan: (ref: string) => boolean): Promise<number> {
    const candidates: string[] = [];
    for await (const o of this.store.list(PAYLOAD_PREFIX)) {
      const ref = o.key.slice(PAYLOAD_PREFIX.length);
      if (isCandidate(ref)) candidates.push(ref);
    }
    if (candidates.length === 0) return 0;
    await confirm();
    const orphans = candidates.filter(stillOrphan);
    await this.deleteAll(orphans);
    return orphans.length;
  }

  /** Lists every payload object (tests and orphan checks). */
  async list(): Promise<string[]> {
    const out: string[] = [];
    for await (const o of this.store.list(PAYLOAD_PREFIX)) out.push(o.key.slice(PAYLOAD_PREFIX.length));
    return out;
  }
}
