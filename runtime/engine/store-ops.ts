/**
 * @module Object-store calls the engine makes, with its retry policy:
 * idempotent create-if-absent and bounded-concurrency fan-out.
 */
import { PreconditionFailedError } from "../errors.js";
import { listedUnder } from "../store/listing-pages.js";
import { readBorrowed, type ObjectStore } from "../store/object-store.js";
import { withRetries, type RetryPolicy } from "./retry.js";

/** What `createOnce` found: our object created, or the bytes already there. */
export type CreateResult = { created: true } | { created: false; existing: Uint8Array | null };

/**
 * Creates `key` with put-if-absent. A retried put whose first attempt landed
 * finds its own bytes there; that counts as created. Otherwise the bytes
 * already stored are returned (`null` if the object vanished meanwhile) for
 * the caller to judge: usually another writer got there first. So two
 * writers must never put the same bytes under one key: the loser would take
 * the winner's object for its own (a manifest claim carries a random opener
 * id, a WAL object or fence its writer's epoch, for that reason).
 */
export async function createOnce(store: ObjectStore, key: string, bytes: Uint8Array, policy: RetryPolicy, stop?: () => boolean): Promise<CreateResult> {
  try {
    await withRetries(policy, "put", key, () => store.put(key, bytes, { ifNoneMatch: "*" }), stop);
    return { created: true };
  } catch (err) {
    if (!(err instanceof PreconditionFailedError)) throw err;
  }
  const found = await withRetries(policy, "get", key, () => store.get(key), stop);
  if (found !== null && Buffer.compare(found.body, bytes) === 0) return { created: true };
  return { created: false, existing: found?.body ?? null };
}

/** Reads `key` with retries; `null` when absent. */
export async function getWithRetries(store: ObjectStore, key: string, policy: RetryPolicy, stop?: () => boolean): Promise<Uint8Array | null> {
  const found = await withRetries(policy, "get", key, () => store.get(key), stop);
  return found?.body ?? null;
}

/**
 * Reads `key` with retries for a caller that never writes into the answer
 * (see `ObjectStore.getBorrowed`): it may be the store's own bytes, so it
 * must not reach anything that writes, nor a user; `null` when absent.
 */
export async function borrowWithRetries(store: ObjectStore, key: string, policy: RetryPolicy): Promise<Uint8Array | null> {
  const found = await withRetries(policy, "get", key, () => readBorrowed(store, key));
  return found?.body ?? null;
}

/*
 * Both listings below go through `listedUnder`: a store the user wrote may
 * ignore the prefix or the key to start after, and the engine took the
 * user's own objects for a WAL object of a store whose manifests were all
 * deleted (refusing to open), and held every key of the bucket listed.
 */

/** Lists every key under `prefix` (after `startAfter`), with retries of the whole listing. */
export async function listKeys(store: ObjectStore, prefix: string, policy: RetryPolicy, startAfter?: string): Promise<string[]> {
  return withRetries(policy, "list", prefix, async () => {
    const keys: string[] = [];
    for await (const o of listedUnder(store, prefix, startAfter === undefined ? {} : { startAfter })) keys.push(o.key);
    return keys;
  });
}

/** The first key under `prefix`, or undefined when there is none; reads one page at most from a store that keeps to the prefix. */
export async function firstKey(store: ObjectStore, prefix: string, policy: RetryPolicy): Promise<string | undefined> {
  return withRetries(policy, "list", prefix, async () => {
    for await (const o of listedUnder(store, prefix)) return o.key;
    return undefined;
  });
}

/** Runs `fn` over `items` with at most `limit` calls at once; rejects with the first failure. */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
