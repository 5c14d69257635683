/**
 * @module A wrapper that delays every store call, so an in-memory store
 * behaves like a remote one (S3 answers in tens of milliseconds) in
 * benchmarks and in tests of group commit.
 *
 * The delay is real time (a timer), on purpose: it models network time that
 * other work overlaps with, not a decision the code makes from a clock.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ValidationError } from "../errors.js";
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "./object-store.js";
import { seededRandom } from "./prng.js";
import { checkStore } from "./store-check.js";
import { describeValue, optionFields, readExactOptions } from "../option-values.js";
import { passPutBodyReleased } from "./put-body.js";

/** Options of `withLatency`. */
export interface LatencyOptions {
  /** Mean delay per call, in milliseconds. */
  ms: number;
  /** Each delay is drawn uniformly from `ms ± jitterMs` (never below 0). Default 0. */
  jitterMs?: number;
  /** Seed of the jitter generator. Default 1. */
  seed?: number;
}

/**
 * Wraps `store` so that each get, put and delete resolves after a delay, and
 * each listing waits once before its first entry.
 *
 * @example
 * const s3Like = withLatency(new MemoryStore(), { ms: 20, jitterMs: 5 });
 */
export function withLatency(store: ObjectStore, given: LatencyOptions): ObjectStore {
  checkStore("withLatency", store);
  // Read once: each delay uses what was checked here.
  const opts = readExactOptions(given, optionFields<LatencyOptions>({ ms: true, jitterMs: true, seed: true }), "LatencyOptions") as LatencyOptions;
  const jitter = opts.jitterMs ?? 0;
  if (typeof opts.ms !== "number" || !(opts.ms >= 0) || !Number.isFinite(opts.ms) || typeof jitter !== "number" || !(jitter >= 0) || !Number.isFinite(jitter)) {
    throw new ValidationError(`withLatency: ms and jitterMs must be finite numbers >= 0, got ms=${describeValue(opts.ms)} jitterMs=${describeValue(jitter)}`);
  }
  const random = seededRandom(opts.seed ?? 1);
  const delay = (): Promise<void> => {
    const ms = Math.max(0, opts.ms + (jitter === 0 ? 0 : (random() * 2 - 1) * jitter));
    return ms === 0 ? Promise.resolve() : sleep(ms);
  };

  const wrapped: ObjectStore = {
    async get(key: string): Promise<StoredObject | null> {
      await delay();
      return store.get(key);
    },
    ...(store.getBorrowed === undefined
      ? {}
      : {
          async getBorrowed(key: string): Promise<StoredObject | null> {
            await delay();
            return store.getBorrowed!(key);
          },
        }),
    ...(store.getRange === undefined
      ? {}
      : {
          async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
            await delay();
            return store.getRange!(key, offset, length);
          },
        }),
    ...(store.getRangeInto === undefined
      ? {}
      : {
          async getRangeInto(key: string, offset: number, into: Uint8Array): Promise<number | null> {
            await delay();
            return store.getRangeInto!(key, offset, into);
          },
        }),
    async put(key: string, body: Uint8Array, putOpts?: PutOptions): Promise<{ etag: string }> {
      await delay();
      return store.put(key, body, putOpts);
    },
    async delete(key: string): Promise<void> {
      await delay();
      return store.delete(key);
    },
    async *list(prefix: string, listOpts?: ListOptions): AsyncIterable<ListedObject> {
      await delay();
      yield* store.list(prefix, listOpts);
    },
    removeLeftovers(prefix: string): Promise<number> {
      return store.removeLeftovers?.(prefix) ?? Promise.resolve(0);
    },
  };
  passPutBodyReleased(store, wrapped);
  return wrapped;
}
