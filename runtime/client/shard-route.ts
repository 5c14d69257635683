/**
 * @module Which shard a run or a signal belongs to (see
 * `queue/shard-layout` for where a sharded deployment records its shard
 * count and keeps each shard).
 *
 * A run lives on shard `hash(runId) mod S`; a signal goes to shard
 * `hash(route) mod S`, where `route` is the text after the last ':' of its
 * correlation key (the whole key when it has none). So a run waiting on
 * `payment:order-1` meets its signal when its run id is `order-1`: run ids
 * cannot contain ':', and both hash the same text.
 */
import { checkShardCount, routeText, stableHash } from "../queue/shard-layout.js";

export {
  checkShardCount,
  decodeShardLayout,
  encodeShardLayout,
  MAX_SHARDS,
  readShardLayout,
  shardLayoutKey,
  shardOfRun,
  shardStoreName,
  stableHash,
  type ShardLayout,
} from "../queue/shard-layout.js";

/** The part of a correlation key that picks its shard: after the last ':', or all of it. */
export function signalRoute(correlationKey: string): string {
  const i = correlationKey.lastIndexOf(":");
  return i < 0 ? correlationKey : correlationKey.slice(i + 1);
}

/** The shard that decides the ticks of schedule `scheduleId` among `shards` (its home shard). */
export function shardOfSchedule(scheduleId: string, shards: number): number {
  return stableHash(`schedule:${scheduleId}`) % shards;
}

/** The shard a signal on `correlationKey` goes to among `shards`. */
export function shardOfSignal(correlationKey: string, shards: number): number {
  const count = checkShardCount(shards);
  return stableHash(signalRoute(routeText("correlation key", correlationKey))) % count;
}
