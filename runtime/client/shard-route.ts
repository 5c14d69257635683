/**
 * @module Which shard a run or a signal belongs to, and where a sharded
 * deployment records its shard count.
 *
 * A sharded store `name` holds `{name}/cluster/shards` (written once, when
 * the deployment is created) and one queue store per shard, named
 * `{name}/shards/{i}`. A run lives on shard `hash(runId) mod S`; a signal
 * goes to shard `hash(route) mod S`, where `route` is the text after the
 * last ':' of its correlation key (the whole key when it has none). So a
 * run waiting on `payment:order-1` meets its signal when its run id is
 * `order-1`: run ids cannot contain ':', and both hash the same text.
 */
import { ValidationError } from "../errors.js";
import type { ObjectStore } from "../store/object-store.js";

/** The most shards a deployment may have. */
export const MAX_SHARDS = 256;

/** The key of the shard layout record of the sharded store `name`. */
export const shardLayoutKey = (name: string): string => `${name}/cluster/shards`;

/** The queue store name (for `Queue.open`) of shard `i` of `name`. */
export const shardStoreName = (name: string, i: number): string => `${name}/shards/${i}`;

/** What the layout record holds. */
export interface ShardLayout {
  /** How many shards; fixed when the deployment was created. */
  readonly shards: number;
}

const enc = new TextEncoder();

/** FNV-1a, 32 bits, over UTF-8: stable across processes, versions and platforms. */
export function stableHash(text: string): number {
  let h = 0x811c9dc5;
  for (const b of enc.encode(text)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The part of a correlation key that picks its shard: after the last ':', or all of it. */
export function signalRoute(correlationKey: string): string {
  const i = correlationKey.lastIndexOf(":");
  return i < 0 ? correlationKey : correlationKey.slice(i + 1);
}

/** The shard of run `runId` among `shards`. */
export function shardOfRun(runId: string, shards: number): number {
  return stableHash(runId) % shards;
}

/** The shard that decides the ticks of schedule `scheduleId` among `shards` (its home shard). */
export function shardOfSchedule(scheduleId: string, shards: number): number {
  return stableHash(`schedule:${scheduleId}`) % shards;
}

/** The shard a signal on `correlationKey` goes to among `shards`. */
export function shardOfSignal(correlationKey: string, shards: number): number {
  return stableHash(signalRoute(correlationKey)) % shards;
}

/** Checks a shard count: a whole number from 1 to `MAX_SHARDS`. */
export function checkShardCount(shards: unknown): number {
  if (typeof shards !== "number" || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new ValidationError(`a shard count must be a whole number from 1 to ${MAX_SHARDS}, got ${String(shards)}`);
  }
  return shards;
}

/** Decodes a layout record; a record this version cannot read is a `ValidationError` naming the store. */
export function decodeShardLayout(name: string, body: Uint8Array): ShardLayout {
  try {
    const o = JSON.parse(new TextDecoder().decode(body)) as { v?: unknown; shards?: unknown };
    if (o.v === 1) return { shards: checkShardCount(o.shards) };
  } catch {
    // reported below
  }
  throw new ValidationError(`the shard layout of store "${name}" is unreadable; it was written by a newer version or damaged`);
}

export function encodeShardLayout(layout: ShardLayout): Uint8Array {
  return enc.encode(JSON.stringify({ v: 1, shards: layout.shards }));
}

/** The shard layout of `name`, or undefined when the store is not sharded. */
export async function readShardLayout(store: ObjectStore, name: string): Promise<ShardLayout | undefined> {
  const got = await store.get(shardLayoutKey(name));
  return got === null ? undefined : decodeShardLayout(name, got.body);
}
