/**
 * @module The single-writer, ordered, transactional key-value engine whose
 * only durable home is an object store.
 *
 * CONTRACT (the queue and everything above depend on exactly this):
 * - Keys are strings ordered by the byte order of their UTF-8 encoding
 *   (`compareKeys`); values are bytes.
 * - Reads (`get`, `has`, `scan`) are synchronous over the in-memory state.
 * - `commit(batch)` applies the batch to the in-memory state synchronously,
 *   before it returns, so a transaction is: read synchronously, build a
 *   batch, commit, all inside one turn of the event loop. No locks needed.
 *   The returned promise resolves once the batch is durable (its WAL
 *   segment and every earlier one are stored), and rejects with
 *   `FencedError` / `ClosedError` when it never will be.
 * - Never mutate the engine while iterating a `scan`; collect first.
 *
 * THIS FILE IS A STUB: durability (WAL, group commit, fencing, checkpoints,
 * recovery) is being built behind this same surface.
 */
import { ClosedError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import type { ObjectStore } from "../store/object-store.js";
import { newSortedMap, type SortedMap } from "./sorted-map.js";
import type { WriteBatch } from "./write-batch.js";

export interface EngineOptions {
  /** How long a commit may wait for others to share its WAL object. Default: 2 ms. */
  flushIntervalMs?: number;
  /** Most bytes per WAL object before it is flushed early. Default: 4 MiB. */
  maxWalBytes?: number;
}

export interface ScanOptions {
  /** Only keys starting with this prefix. */
  prefix?: string;
  /** Lower bound (inclusive unless `startExclusive`). */
  start?: string;
  startExclusive?: boolean;
  /** Upper bound, exclusive. */
  end?: string;
  /** Stop after this many entries. */
  limit?: number;
  /** Descending order. */
  reverse?: boolean;
}

export interface CommitOptions {
  /**
   * `false`: the caller does not wait for durability (the promise still
   * settles). Use only for writes that are safe to lose in a crash because
   * redoing them is idempotent (claims, sweeps, recovery requeues).
   */
  durable?: boolean;
}

export class Engine {
  readonly store: ObjectStore;
  #state: SortedMap = newSortedMap();
  #closed = false;

  private constructor(store: ObjectStore) {
    this.store = store;
  }

  static async open(store: ObjectStore, _opts: EngineOptions = {}): Promise<Engine> {
    return new Engine(store);
  }

  get closed(): boolean {
    return this.#closed;
  }

  get(key: string): Uint8Array | undefined {
    return this.#state.get(key);
  }

  has(key: string): boolean {
    return this.#state.has(key);
  }

  *scan(opts: ScanOptions = {}): IterableIterator<[string, Uint8Array]> {
    yield* scanTree(this.#state, opts);
  }

  commit(batch: WriteBatch, _opts: CommitOptions = {}): Promise<void> {
    if (this.#closed) return Promise.reject(new ClosedError("the engine"));
    for (const op of batch.ops) {
      if (op.kind === "put") this.#state.set(op.key, op.value);
      else this.#state.delete(op.key);
    }
    return Promise.resolve();
  }

  /** Resolves when every commit made so far is durable. */
  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.#closed = true;
  }
}

/** Ordered iteration over a tree with prefix, bounds, limit and direction. */
export function* scanTree(
  tree: SortedMap,
  opts: ScanOptions,
): IterableIterator<[string, Uint8Array]> {
  const { prefix = "", limit = Infinity } = opts;
  let lo = opts.start ?? prefix;
  if (compareKeys(lo, prefix) < 0) lo = prefix;
  let count = 0;
  if (count >= limit) return;
  const inRange = (k: string) =>
    k.startsWith(prefix) &&
    (opts.end === undefined || compareKeys(k, opts.end) < 0) &&
    (opts.start === undefined || (opts.startExclusive ? compareKeys(k, opts.start) > 0 : compareKeys(k, opts.start) >= 0));
  if (!opts.reverse) {
    for (const [k, v] of tree.entries(lo)) {
      if (!k.startsWith(prefix) || (opts.end !== undefined && compareKeys(k, opts.end) >= 0)) return;
      if (!inRange(k)) continue;
      yield [k, v];
      if (++count >= limit) return;
    }
  } else {
    const hi = opts.end;
    for (const [k, v] of hi === undefined ? tree.entriesReversed() : tree.entriesReversed(hi)) {
      if (compareKeys(k, lo) < 0) return;
      if (!inRange(k)) continue;
      yield [k, v];
      if (++count >= limit) return;
    }
  }
}
