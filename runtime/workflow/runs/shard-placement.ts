/**
 * @module Run ids that route to the shard a runtime runs on.
 *
 * A runtime over the queue store `{name}/shards/{i}` of a sharded store is
 * on shard `i` of S (`Queue.shard`, read when the queue opens). A run it
 * creates itself (a child run, a member of its run group) lives on its own
 * shard, but clients route a run id to `hash(runId) mod S`: so such an id gets the shortest
 * suffix `-r{n}` (none when the id routes there already) that makes it
 * route to this shard. The id stays derived from what it was derived from,
 * plus S and the shard, which never change: a retried step finds the child
 * it started.
 */
import { ValidationError } from "../../errors.js";
import { shardOfRun, type ShardPlacement } from "../../queue/shard-layout.js";
import { MAX_RUN_ID_LEN, RunId } from "./run-id.js";

export type { ShardPlacement };

/** Room an id leaves for the suffix `-r{n}` of `routedRunId`. */
export const ROUTE_SUFFIX_ROOM = 8;
/** Each try routes to the shard with chance 1/S (S <= 256): this many all missing is beyond belief, but bounded. */
const MAX_TRIES = 100_000;

/** `id` (at most `MAX_RUN_ID_LEN - ROUTE_SUFFIX_ROOM` long), suffixed `-r{n}` when needed to route to `placement`'s shard. */
export function routedRunId(id: RunId, placement: ShardPlacement): RunId {
  if (id.length > MAX_RUN_ID_LEN - ROUTE_SUFFIX_ROOM) throw new ValidationError(`run id "${id}" leaves no room to route it to its shard`);
  for (let n = 0; n < MAX_TRIES; n++) {
    const candidate = n === 0 ? id : `${id}-r${n}`;
    if (shardOfRun(candidate, placement.shards) === placement.shard) return RunId.parse(candidate);
  }
  throw new Error(`no run id derived from "${id}" routes to shard ${placement.shard} of ${placement.shards}`);
}

/** `id` routed to `placement`'s shard on a store of several shards; `id` itself otherwise. */
export function routedOn(id: RunId, placement: ShardPlacement | undefined): RunId {
  return placement === undefined || placement.shards <= 1 ? id : routedRunId(id, placement);
}

/**
 * Throws `ValidationError` when the caller-chosen run id `id` routes to
 * another shard than `placement`'s: clients would look for the run there
 * and never find it. `what` names the submission in the caller's terms.
 */
export function checkRoutesHere(id: RunId, placement: ShardPlacement | undefined, what: string): void {
  if (placement === undefined || placement.shards <= 1) return;
  const home = shardOfRun(id, placement.shards);
  if (home === placement.shard) return;
  throw new ValidationError(
    `${what} belongs to shard ${home} of ${placement.shards}, but this runtime runs shard ${placement.shard}: clients would look for it on shard ${home} and never find it. Submit it through a TaqubaClient on the sharded store, which routes it to its shard`,
  );
}
