/**
 * @module Offloaded payloads: payloads above the threshold live in their own
 * objects under `payloads/<ulid>` in the queue's store view.
 *
 * Invariant: the object is written before the record that references it
 * and deleted only after the commit removing that record is durable, so a
 * crash can orphan an object but never leave a record without its payload.
 */
import type { ObjectStore } from "../store/object-store.js";
import { StoreUnavailableError, TaqubaError } from "../errors.js";
import { PayloadMissingError } from "./errors.js";

/** Where offloaded payloads live in the queue's store view. */
export const PAYLOAD_PREFIX = "payloads/";

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
    await this.store.put(PAYLOAD_PREFIX + ref, payload, { ifNoneMatch: "*" });
  }

  async read(jobId: string, ref: string): Promise<Uint8Array> {
    let o;
    try {
      o = await this.store.get(PAYLOAD_PREFIX + ref);
    } catch (err) {
      throw err instanceof TaqubaError ? err : new StoreUnavailableError("get", PAYLOAD_PREFIX + ref, err);
    }
    if (o === null) throw new PayloadMissingError(jobId, PAYLOAD_PREFIX + ref);
    return o.body;
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
