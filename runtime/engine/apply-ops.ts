/**
 * @module Applying a batch's ops to a state: the memtable, the delta of
 * changed keys the next incremental checkpoint writes, and the packing of
 * values a paging policy keeps in memory. Used by commits and by the WAL
 * replay of the writer's open and of readers.
 */
import { isPageable, keepValue, type PagePolicy, type StateMap, type ValueArena } from "./paged-value.js";
import type { DeltaMap } from "./sorted-map.js";
import type { ChangedValue } from "./changed-keys.js";
import type { EncodedKeys } from "./wal-format.js";
import type { CommittedPacks } from "./committed-packs.js";
import type { BatchOp } from "./write-batch.js";

/**
 * Applies one batch to a state, in op order, and records each change in
 * `delta` when given (the keys the next incremental checkpoint writes). With
 * a paging `policy`, values it will not page out are packed now, or copied
 * into `arena` (see `keepValue`), so the state never holds the caller's
 * arrays or views into WAL objects; the others wait for a checkpoint to page them, copied into
 * `arena` when given (the writer passes one for commits and replays: see
 * `ValueArena`), else as they are. `keys`: where the WAL wrote these ops'
 * keys (a commit's), which the delta copies rather than encoding them again.
 * `packs`: told each value packed into a string (a commit's), for the
 * commit's tokens (see `CommittedPacks`).
 */
export function applyOps(
  tree: StateMap,
  ops: readonly BatchOp[],
  delta?: DeltaMap,
  policy?: PagePolicy,
  arena?: ValueArena,
  keys?: EncodedKeys,
  packs?: CommittedPacks,
): void {
  const spans = keys?.spans;
  // Every key of the batch is ASCII, as the WAL's encoding found: the memtable skips its key-order check.
  const ascii = keys?.ascii === true;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    let v: ChangedValue = null;
    // Whether the key had a value before this op: a key that had none when the delta began and is
    // deleted again is no change to write (see changed-keys.ts).
    let had: boolean;
    if (op.kind === "put") {
      v = policy === undefined ? op.value : isPageable(policy, op.key, op.value) ? (arena?.copy(op.value) ?? op.value) : keepValue(op.key, op.value, arena);
      if (packs !== undefined && typeof v === "string") packs.note(op, v);
      had = tree.set(op.key, v, ascii, op.hint);
    } else had = tree.delete(op.key, op.hint);
    if (delta === undefined) continue;
    if (spans === undefined) delta.set(op.key, v, had === false);
    else {
      const heads = keys!.heads;
      delta.setJoined(keys!.bytes, heads[2 * i]!, heads[2 * i + 1]!, spans[2 * i]!, spans[2 * i + 1]!, v, had === false);
    }
  }
}
