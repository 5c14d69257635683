/**
 * @module The one interface every durable byte goes through.
 *
 * The engine needs only create-if-absent puts and writes to keys no other
 * process writes, so any store with conditional create works: S3, R2, GCS,
 * MinIO or a local disk. No compare-and-swap on existing objects is needed.
 */

export interface StoredObject {
  body: Uint8Array;
  etag: string;
}

export interface PutOptions {
  /** `"*"`: create only when the key is absent, else `PreconditionFailedError`. */
  ifNoneMatch?: "*";
}

export interface ListedObject {
  key: string;
  size: number;
}

export interface ListOptions {
  /** List only keys strictly after this one. */
  startAfter?: string;
}

export interface ObjectStore {
  /** The object at `key`, or `null` when absent. */
  get(key: string): Promise<StoredObject | null>;
  /** Writes `body` at `key`. Durable once the promise resolves. */
  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }>;
  /** Removes `key`; an absent key is not an error. */
  delete(key: string): Promise<void>;
  /** Keys starting with `prefix`, in ascending byte order of their UTF-8 encoding. */
  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject>;
}
