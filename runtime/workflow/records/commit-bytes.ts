/**
 * @module Encodings of the runtime's own records that go only into a
 * commit: staged, committed and dropped, never kept, compared, hashed or
 * decoded. When the queue's commits copy every value they take
 * (`copiesCommittedValues`, the default, with a record cache), such an
 * encoding is a view of the encoder's shared chunk (`packPlain`'s shared
 * mode): no copy out of the chunk and no array buffer of its own, which V8
 * allocates outside the heap for a record over 64 bytes (a step's history
 * entry) at about 30 times the cost of a small one. Otherwise it is an
 * array of its own: the engine keeps what it commits, and a kept view
 * would keep its whole chunk alive.
 *
 * `CommitOnlyBytes` is not a `Uint8Array` to the type checker, so it cannot
 * be kept as a record's bytes, compared, hashed or decoded by mistake: the
 * staging functions here are its only use. A view's bytes are never written
 * again (the encoder moves past them), so a commit that fails and is tried
 * again with the same effects commits the same bytes.
 */
import { type SettlementEffects, stageOwnedPut, stageOwnedPutOnce, stageOwnedPutUnder } from "../../queue/effects.js";
import { ownedBytes } from "../../queue/owned-bytes.js";
import { packPlain } from "../../queue/record-pack.js";
import type { KvKeyPrefixRef, KvKeyRef } from "../../queue/user-keys.js";
import { encodeValue } from "./codec.js";

declare const commitOnly: unique symbol;

/** A record's encoding that may share memory with other records': stage it (`stageCommitOnly`), never keep it. */
export interface CommitOnlyBytes {
  readonly [commitOnly]: true;
}

/** Where a record is staged: a queue, which tells whether its commits copy what they take (`WorkflowQueue.copiesCommittedValues`). */
export interface CommitTarget {
  readonly copiesCommittedValues?: boolean | undefined;
}

/** `value` encoded as `encodeValue` encodes it, for a put staged into a commit of `target`. */
export function encodeForCommit(value: unknown, target: CommitTarget): CommitOnlyBytes {
  const bytes = (target.copiesCommittedValues === true ? packPlain(value, true) : undefined) ?? encodeValue(value);
  return bytes as unknown as CommitOnlyBytes;
}

/** Stages a put of `bytes` at caller key `key` (or its reference), checked as `kvPut` checks it, without a copy. */
export function stageCommitOnly(effects: SettlementEffects, key: string | KvKeyRef, bytes: CommitOnlyBytes): void {
  stageOwnedPut(effects, key, ownedBytes(bytes as unknown as Uint8Array));
}

/** `stageCommitOnly` for a key written once and never read on a hot path (see `stageOwnedPutOnce`). */
export function stageCommitOnlyOnce(effects: SettlementEffects, key: string, bytes: CommitOnlyBytes): void {
  stageOwnedPutOnce(effects, key, ownedBytes(bytes as unknown as Uint8Array));
}

/** `stageCommitOnlyOnce` at caller key `prefix + suffix`, under a prefix checked once (see `stageOwnedPutUnder`). */
export function stageCommitOnlyUnder(effects: SettlementEffects, prefix: KvKeyPrefixRef, suffix: string, bytes: CommitOnlyBytes): void {
  stageOwnedPutUnder(effects, prefix, suffix, ownedBytes(bytes as unknown as Uint8Array));
}
