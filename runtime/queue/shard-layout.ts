/**
 * @module Where a sharded deployment records its shard count, where each
 * shard's queue store lives, and which shard a run belongs to.
 *
 * A sharded store `name` holds `{name}/cluster/shards` (written once, when
 * the deployment is created) and one queue store per shard, named
 * `{name}/shards/{i}`. A run lives on shard `hash(runId) mod S`. The
 * client routes by it (see `client/shard-route`), and a runtime over a
 * shard's queue reads it to give the runs it creates itself (child runs)
 * ids that route back to its own shard.
 */
import { StoreCorruptedError, ValidationError } from "../errors.js";
import { UnsupportedFormatError } from "../engine/format-error.js";
import type { ObjectStore } from "../store/object-store.js";
import { describeValue } from "../option-values.js";

/** The most shards a deployment may have. */
export const MAX_SHARDS = 256;

/** The key of the shard layout record of the sharded store `name`. */
export const shardLayoutKey = (name: string): string => `${name}/cluster/shards`;

/** The queue store name (for `Queue.open`) of shard `i` of `name`. */
export const shardStoreName = (name: string, i: number): string => `${name}/shards/${i}`;

const SHARD_STORE_NAME = /^(.+)\/shards\/(0|[1-9]\d{0,2})$/;

/** The sharded store and shard number a queue store name (`{name}/shards/{i}`) names; undefined for any other name. */
export function parseShardStoreName(storeName: string): { readonly name: string; readonly shard: number } | undefined {
  const m = SHARD_STORE_NAME.exec(storeName);
  return m === null ? undefined : { name: m[1]!, shard: Number(m[2]) };
}

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

/** The shard of run `runId` among `shards`. */
export function shardOfRun(runId: string, shards: number): number {
  // The count first: it is cheap to check, and a refusal should not hash a long id first.
  const count = checkShardCount(shards);
  return stableHash(routeText("run id", runId)) % count;
}

/** `text`, refused naming `what` unless a string: a number would hash as its digits and NaN shards would route nowhere. */
export function routeText(what: string, text: unknown): string {
  if (typeof text !== "string") throw new ValidationError(`a ${what} to route must be a string, got ${describeValue(text)}`);
  return text;
}

/** Checks a shard count: a whole number from 1 to `MAX_SHARDS`. */
export function checkShardCount(shards: unknown): number {
  if (typeof shards !== "number" || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new ValidationError(`a shard count must be a whole number from 1 to ${MAX_SHARDS}, got ${describeValue(shards)}`);
  }
  return shards;
}

/** The format version of the layout record this version writes and reads. */
const LAYOUT_VERSION = 1;

/**
 * Decodes a layout record. A record of a newer format is an
 * `UnsupportedFormatError`; damaged bytes are a `StoreCorruptedError`
 * naming the object and how to mend it.
 */
export function decodeShardLayout(name: string, body: Uint8Array): ShardLayout {
  const key = shardLayoutKey(name);
  const damaged = (detail: string) =>
    new StoreCorruptedError(
      key,
      `the shard layout of sharded store "${name}": ${detail}`,
      `put it back from a backup, or rewrite it as {"v":1,"shards":N} where N is the shard count the store was created with (one more than the highest i of its "${name}/shards/i" queue stores); until then no client or shard worker can open the store`,
    );
  let o: unknown;
  try {
    o = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    throw damaged("not JSON");
  }
  if (o === null || typeof o !== "object" || Array.isArray(o)) throw damaged("not a JSON object");
  const { v, shards } = o as { v?: unknown; shards?: unknown };
  if (typeof v === "number" && Number.isInteger(v) && v > LAYOUT_VERSION) throw new UnsupportedFormatError(key, v, LAYOUT_VERSION);
  if (v !== LAYOUT_VERSION) throw damaged(`format version ${JSON.stringify(v) ?? "missing"}`);
  if (typeof shards !== "number" || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw damaged(`shard count ${JSON.stringify(shards) ?? "missing"}, not a whole number from 1 to ${MAX_SHARDS}`);
  }
  return { shards };
}

export function encodeShardLayout(layout: ShardLayout): Uint8Array {
  return enc.encode(JSON.stringify({ v: 1, shards: layout.shards }));
}

/** The shard layout of `name`, or undefined when the store is not sharded. */
export async function readShardLayout(store: ObjectStore, name: string): Promise<ShardLayout | undefined> {
  const got = await store.get(shardLayoutKey(name));
  return got === null ? undefined : decodeShardLayout(name, got.body);
}

/** The shard a queue store is, as `Queue.shard` reports it. */
export interface ShardPlacement {
  /** Its number, 0 to `shards - 1`. */
  readonly shard: number;
  /** How many shards its deployment has. */
  readonly shards: number;
}

/**
 * The shard the queue store `storeName` is: undefined unless its name is
 * `{name}/shards/{i}` and `{name}` has a layout record. A shard number the
 * layout does not have is a `ValidationError`.
 */
export async function readShardPlacement(store: ObjectStore, storeName: string): Promise<ShardPlacement | undefined> {
  const parsed = parseShardStoreName(storeName);
  if (parsed === undefined) return undefined;
  const layout = await readShardLayout(store, parsed.name);
  if (layout === undefined) return undefined;
  if (parsed.shard >= layout.shards) {
    throw new ValidationError(
      `the queue store "${storeName}" is shard ${parsed.shard}, but the store "${parsed.name}" has ${layout.shards} shards; open one of shards 0 to ${layout.shards - 1}`,
    );
  }
  return { shard: parsed.shard, shards: layout.shards };
}
