/**
 * @module The one interface every durable byte goes through.
 *
 * The engine needs only create-if-absent puts and writes to keys no other
 * process writes, so any store with conditional create works: S3, R2, GCS,
 * MinIO or a local disk. No compare-and-swap on existing objects is needed.
 */
import { StoreRequestError } from "../errors.js";

/** An object as read from a store. */
export interface StoredObject {
  /**
   * The object's bytes: the caller's own from `get`; from `getBorrowed`
   * possibly the store's, which the caller reads and never writes into.
   */
  body: Uint8Array;
  /** A tag that changes whenever the object is replaced. */
  etag: string;
}

/** Options of `ObjectStore.put`. */
export interface PutOptions {
  /** `"*"`: create only when the key is absent, else `PreconditionFailedError`. */
  ifNoneMatch?: "*";
}

/** One entry of a listing. */
export interface ListedObject {
  key: string;
  /** Size of the object in bytes. */
  size: number;
}

/** Options of `ObjectStore.list`. */
export interface ListOptions {
  /** List only keys strictly after this one. */
  startAfter?: string;
}

/**
 * Where every durable byte goes: `MemoryStore`, `LocalStore`, `S3Store`, or
 * any implementation that keeps these promises. Keys are non-empty
 * '/'-separated relative paths (see `validateObjectKey`).
 *
 * @example
 * const store: ObjectStore = new MemoryStore();
 * await store.put("wal/0001", new TextEncoder().encode("batch"), { ifNoneMatch: "*" });
 * for await (const o of store.list("wal/")) console.log(o.key, o.size);
 */
export interface ObjectStore {
  /** The object at `key`, or `null` when absent. */
  get(key: string): Promise<StoredObject | null>;
  /**
   * Optional: the object at `key` as `get` reads it, for a caller that
   * promises never to write into its body (nor to hand it to anything that
   * might) for as long as it holds it: the store may answer bytes it keeps,
   * which every later read also sees, instead of a copy. A store whose `get`
   * makes fresh bytes anyway omits it; callers then read through `get` (see
   * `readBorrowed`). Wrappers pass it through. The mirror of a lent put body
   * (store/put-body.ts); `MemoryStore` answers the bytes it holds.
   */
  getBorrowed?(key: string): Promise<StoredObject | null>;
  /**
   * Optional: `length` bytes of the object at `key` starting at byte
   * `offset` (fewer when the object ends first, none when it ends before
   * `offset`), or `null` when absent. `offset` is a whole number >= 0 and
   * `length` one >= 1. Stores that cannot read a range omit it; callers
   * then read the whole object (see `readRange`). Wrappers pass it through.
   */
  getRange?(key: string, offset: number, length: number): Promise<Uint8Array | null>;
  /**
   * Optional: the bytes of the object at `key` from byte `offset` read into
   * `into` (at most `into.byteLength`; fewer when the object ends first),
   * resolving to how many were read, or `null` when absent. It lets a caller
   * read into a buffer it reuses instead of one made per read. The store
   * writes into `into` only until the promise settles, never after; a read
   * that rejects may have written part of it. Stores without it are read
   * through `getRange` or `get` (see `readRangeInto`). Wrappers pass it through.
   */
  getRangeInto?(key: string, offset: number, into: Uint8Array): Promise<number | null>;
  /**
   * Writes `body` at `key`. Durable once the promise resolves. The store
   * never writes into `body`, and its caller does not until the promise
   * settles. A store keeps `body` itself past that (not a copy) only when
   * the caller lent it and the store was not declared done with bodies
   * once a put settles: the caller then never writes it again (see
   * store/put-body.ts; `MemoryStore` keeps such a body as the object).
   */
  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }>;
  /** Removes `key`; an absent key is not an error. */
  delete(key: string): Promise<void>;
  /** Keys starting with `prefix`, in ascending byte order of their UTF-8 encoding. */
  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject>;
  /**
   * Optional: removes what writes interrupted by a killed process left
   * under `prefix` (LocalStore: temporary files of dead processes) and
   * resolves to how many it removed. Stores whose puts leave nothing behind
   * omit it; wrappers pass it through. A writer calls it when it opens.
   */
  removeLeftovers?(prefix: string): Promise<number>;
}

/** Checks the arguments of `ObjectStore.getRange`; implementations call it first. */
export function checkRange(offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 1) {
    throw new RangeError(`getRange needs a whole offset >= 0 and a whole length >= 1, got offset ${offset} and length ${length}`);
  }
}

/** Checks the arguments of `ObjectStore.getRangeInto`; implementations call it first. */
export function checkRangeInto(offset: number, into: Uint8Array): void {
  if (!(into instanceof Uint8Array)) throw new TypeError("getRangeInto needs a Uint8Array to read into");
  // Named for itself, not through checkRange: a caller of getRangeInto passed no length.
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`getRangeInto needs a whole offset >= 0, got offset ${offset}`);
}

/**
 * The requested range out of a ranged response's `body`: a `Content-Range`
 * header (`bytes <first>-<last>/<size>`) says where the body starts; without
 * one the body is the whole object (a server that ignored the range).
 */
export function rangeOfBody(key: string, body: Uint8Array, contentRange: string | undefined, offset: number, length: number): Uint8Array {
  const from = offset - bodyStart(key, contentRange, offset);
  return from === 0 && body.byteLength <= length ? body : body.slice(from, from + length);
}

/**
 * Where a ranged response's body starts in the object (see `rangeOfBody`):
 * 0 without a `Content-Range`; a body that starts after `offset` is refused.
 */
export function bodyStart(key: string, contentRange: string | undefined, offset: number): number {
  const m = contentRange === undefined ? null : /^bytes (\d+)-\d+\/(?:\d+|\*)$/.exec(contentRange.trim());
  const start = m === null ? 0 : Number(m[1]);
  if (start > offset) {
    throw new StoreRequestError(
      "get",
      key,
      `a read from byte ${offset} was answered with bytes from ${start} (Content-Range ${contentRange}); check that the endpoint is an S3-, Azure- or GCS-compatible service`,
    );
  }
  return start;
}

/**
 * The object at `key` for a caller that never writes into its body (see
 * `ObjectStore.getBorrowed`): the store's own bytes when it lends them, else
 * a `get`'s copy.
 */
export function readBorrowed(store: ObjectStore, key: string): Promise<StoredObject | null> {
  return store.getBorrowed !== undefined ? store.getBorrowed(key) : store.get(key);
}

/**
 * Bytes `offset` to `offset + length` of `key` (fewer when the object ends
 * first), or `null` when absent: through `store.getRange` when the store has
 * it, else a whole `get` sliced.
 */
export async function readRange(store: ObjectStore, key: string, offset: number, length: number): Promise<Uint8Array | null> {
  checkRange(offset, length);
  if (store.getRange !== undefined) {
    const got = await store.getRange(key, offset, length);
    // More than asked is a store that ignores ranges, not data gone wrong: callers check short answers
    // against what they know of the object, and would otherwise call this one corrupted.
    if (got !== null && got.byteLength > length) {
      throw new StoreRequestError(
        "get",
        key,
        `a read of ${length} bytes from byte ${offset} was answered with ${got.byteLength} bytes; the store's getRange must return at most the bytes asked for`,
      );
    }
    return got;
  }
  const found = await store.get(key);
  return found === null ? null : found.body.subarray(Math.min(offset, found.body.byteLength), Math.min(offset + length, found.body.byteLength));
}

/**
 * Bytes `offset` to `offset + length` of `key` as `readRange` reads them,
 * but into `into` (at least `length` bytes) when the store reads into a
 * caller's buffer: then the answer is a view of `into`, else a buffer of its
 * own. A rejected read may have written part of `into`.
 */
export async function readRangeInto(store: ObjectStore, key: string, offset: number, length: number, into: Uint8Array): Promise<Uint8Array | null> {
  checkRange(offset, length);
  if (into.byteLength < length) throw new RangeError(`readRangeInto needs a buffer of at least ${length} bytes, got ${into.byteLength}`);
  if (store.getRangeInto === undefined) return readRange(store, key, offset, length);
  const target = into.byteLength === length ? into : into.subarray(0, length);
  const n = await store.getRangeInto(key, offset, target);
  if (n === null) return null;
  if (!Number.isSafeInteger(n) || n < 0 || n > length) {
    throw new StoreRequestError(
      "get",
      key,
      `a read of ${length} bytes from byte ${offset} into a buffer answered ${n}; the store's getRangeInto must resolve to the bytes it read, at most the buffer's length`,
    );
  }
  return target.subarray(0, n);
}
