/**
 * @module Which shard of a sharded deployment a runtime runs on, and run
 * ids that route to it.
 *
 * A runtime over the queue store `{name}/shards/{i}` of a sharded store is
 * on shard `i` of the S its layout record holds (read once, on first use).
 * A run it creates itself (a child run) lives on its own shard, but clients
 * route a run id to `hash(runId) mod S`: so such an id gets the shortest
 * suffix `-r{n}` (none when the id routes there already) that makes it
 * route to this shard. The id stays derived from what it was derived from,
 * plus S and the shard, which never change: a retried step finds the child
 * it started.
 */
import { ValidationError } from "../../errors.js";
import { parseShardStoreName, readShardLayout, shardOfRun } from "../../queue/shard-layout.js";
import type { ObjectStore } from "../../store/object-store.js";
import { MAX_RUN_ID_LEN, RunId } from "./run-id.js";

/** The shard a runtime runs on. */
export interface ShardPlacement {
  readonly shard: number;
  readonly shards: number;
}

/** Reads a runtime's placement once (a failed read is tried again on the next call); undefined when its queue is not a shard's. */
export function placementReader(store: ObjectStore, queueStoreName: string | undefined): () => Promise<ShardPlacement | undefined> {
  const parsed = queueStoreName === undefined ? undefined : parseShardStoreName(queueStoreName);
  if (parsed === undefined) return () => Promise.resolve(undefined);
  let known: Promise<ShardPlacement | undefined> | undefined;
  const read = async (): Promise<ShardPlacement | undefined> => {
    const layout = await readShardLayout(store, parsed.name);
    if (layout === undefined) return undefined;
    if (parsed.shard >= layout.shards) {
      throw new ValidationError(
        `the queue store "${queueStoreName}" is shard ${parsed.shard}, but the store "${parsed.name}" has ${layout.shards} shards; open one of shards 0 to ${layout.shards - 1}`,
      );
    }
    return { shard: parsed.shard, shards: layout.shards };
  };
  return () => {
    known ??= read().catch((e: unknown) => {
      known = undefined;
      throw e;
    });
    return known;
  };
}

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
