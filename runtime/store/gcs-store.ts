/**
 * @module An object store in a Google Cloud Storage bucket, over the
 * optional package `@google-cloud/storage` (its JSON API).
 *
 * Create-if-absent is an upload with `ifGenerationMatch=0` ("only if no live
 * version exists"); the service answers a lost race with 412, which becomes
 * `PreconditionFailedError`. Uploads are single-request (not resumable) and
 * carry the body's MD5 so the service rejects a body damaged in transit;
 * downloads are checked against the CRC32C the service sends. Listing is by
 * prefix, page by page, starting at `startOffset` for `startAfter`. Throttling
 * (429), 408, 5xx and network failures are retried with backoff; a missing
 * bucket, refused credentials and bad requests are permanent
 * `StoreRequestError`s naming the bucket. The SDK's own retries are off.
 */
import type { ApiError, Bucket, StorageOptions } from "@google-cloud/storage";
import { createHash } from "node:crypto";
import { PreconditionFailedError, StoreRequestError, StoreUnavailableError, ValidationError } from "../errors.js";
import { checkOptionalString, optionFields, quoteValue, readExactOptions } from "../option-values.js";
import { bytesEqual } from "./bytes-equal.js";
import { validateObjectKey } from "./keys.js";
import { checkRange, rangeOfBody, type ListOptions, type ListedObject, type ObjectStore, type PutOptions, type StoredObject } from "./object-store.js";
import {
  isNetworkError,
  retryableUnlessUnreadable,
  listPageSize,
  loadOptionalPackage,
  requestTimeout,
  retryRequest,
  retrySettings,
  type FailureJudge,
  type RetrySettings,
  type StoreRetryOptions,
} from "./request-retry.js";
import { skipThrough } from "./skip-through.js";
import { ListingPages } from "./listing-pages.js";
import { inUtf8Order } from "./utf8-order.js";
import { declareBuiltInStore } from "./own-state.js";

type GcsSdk = typeof import("@google-cloud/storage");

/** Options of `GcsStore`. */
export interface GcsStoreOptions {
  /** The bucket; it must exist. */
  bucket: string;
  /** Key prefix inside the bucket, e.g. `"tenants/a"`; a trailing `/` is implied. */
  prefix?: string;
  /** The project, when Application Default Credentials do not name one. */
  projectId?: string;
  /** A service account key file; default: Application Default Credentials. */
  keyFilename?: string;
  /**
   * Another JSON API endpoint, e.g. an emulator at `http://127.0.0.1:4443`.
   * The SDK sends no credentials to an endpoint other than Google's.
   */
  apiEndpoint?: string;
  retry?: StoreRetryOptions;
  /** Objects per list request, 1 to 1,000. Default 1,000. */
  listPageSize?: number;
  /** Longest wait for one request before it counts as failed (and is retried). Default 60,000 ms. */
  requestTimeoutMs?: number;
}

const BUCKET_NAME = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;
const PAGE_SIZE = 1000;

function statusOf(err: unknown): number | undefined {
  const code = typeof err === "object" && err !== null ? (err as Partial<ApiError>).code : undefined;
  return typeof code === "number" ? code : undefined;
}

function reasonOf(err: unknown): string {
  const errors = typeof err === "object" && err !== null ? (err as Partial<ApiError>).errors : undefined;
  const reason = Array.isArray(errors) ? (errors[0] as { reason?: unknown } | undefined)?.reason : undefined;
  return typeof reason === "string" ? reason : "";
}

/** Whether repeating the request may succeed: throttling, timeouts, server errors, network failures. */
export function isRetryableGcsError(err: unknown): boolean {
  return retryableUnlessUnreadable(retryableGcs, err);
}

function retryableGcs(err: unknown): boolean {
  const status = statusOf(err);
  if (status !== undefined) return status >= 500 || status === 429 || status === 408;
  return isNetworkError(err);
}

function isMissingBucket(err: unknown): boolean {
  return statusOf(err) === 404 && err instanceof Error && /bucket/i.test(err.message) && !/no such object/i.test(err.message);
}

function isMissingObject(err: unknown): boolean {
  return statusOf(err) === 404 && !isMissingBucket(err);
}

const GCS_OPTION_KEYS = optionFields<GcsStoreOptions>({
  bucket: true,
  prefix: true,
  projectId: true,
  keyFilename: true,
  apiEndpoint: true,
  retry: true,
  listPageSize: true,
  requestTimeoutMs: true,
});

/**
 * A store whose objects live under a prefix of one Cloud Storage bucket.
 *
 * The SDK is loaded on first use; without `@google-cloud/storage` installed,
 * that first call fails with `MissingDependencyError`.
 *
 * @example
 * const store = new GcsStore({ bucket: "my-bucket", prefix: "taquba/prod" });
 */
export class GcsStore implements ObjectStore {
  // Its methods read private fields, so they work only on the store itself: store checks refuse a wrapper that would call them on itself.
  static {
    declareBuiltInStore(GcsStore.prototype, "GcsStore", (value) => #options in value);
  }

  readonly bucket: string;
  /** Prefix added to every key: `""` or ending in `/`. */
  readonly prefix: string;
  readonly apiEndpoint: string | undefined;
  readonly #options: GcsStoreOptions;
  readonly #retry: RetrySettings;
  readonly #pageSize: number;
  readonly #timeoutMs: number;
  #client: Promise<Bucket> | undefined;

  constructor(given: GcsStoreOptions) {
    // Each option read once: a getter or Proxy that throws is refused by name, never a TypeError.
    const opts = readExactOptions(given, GCS_OPTION_KEYS, "GcsStoreOptions") as GcsStoreOptions;
    for (const k of ["prefix", "projectId", "keyFilename", "apiEndpoint"] as const) checkOptionalString(`GcsStoreOptions.${k}`, opts[k]);
    if (typeof opts.bucket !== "string" || !BUCKET_NAME.test(opts.bucket) || opts.bucket.includes("..")) {
      throw new ValidationError(
        `GcsStore: invalid bucket name ${quoteValue(opts.bucket)}; use 3 to 222 lowercase letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
      );
    }
    this.bucket = opts.bucket;
    const prefix = (opts.prefix ?? "").replace(/\/+$/, "");
    if (prefix !== "") validateObjectKey(prefix);
    this.prefix = prefix === "" ? "" : `${prefix}/`;
    if (opts.apiEndpoint !== undefined) {
      let url: URL | undefined;
      try {
        url = new URL(opts.apiEndpoint);
      } catch {
        url = undefined;
      }
      if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
        throw new ValidationError(`GcsStore: apiEndpoint ${quoteValue(opts.apiEndpoint)} is not an http(s) URL`);
      }
    }
    this.apiEndpoint = opts.apiEndpoint?.replace(/\/+$/, "");
    this.#options = opts;
    this.#retry = retrySettings("GcsStore", opts.retry);
    this.#timeoutMs = requestTimeout("GcsStore", opts.requestTimeoutMs);
    this.#pageSize = listPageSize("GcsStore", opts.listPageSize, PAGE_SIZE);
  }

  async get(key: string): Promise<StoredObject | null> {
    validateObjectKey(key);
    const bucket = await this.#bucket();
    return this.#withRetries("get", key, () => this.#getOnce(bucket, key));
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    validateObjectKey(key);
    checkRange(offset, length);
    const bucket = await this.#bucket();
    return this.#withRetries("get", key, async () => {
      const file = bucket.file(this.prefix + key);
      try {
        return await new Promise<Uint8Array>((resolve, reject) => {
          const chunks: Buffer[] = [];
          file
            .createReadStream({ start: offset, end: offset + length - 1, validation: false })
            .on("data", (chunk: Buffer) => chunks.push(chunk))
            .on("error", reject)
            .on("end", () => {
              const all = Buffer.concat(chunks);
              const body = new Uint8Array(all.buffer, all.byteOffset, all.byteLength);
              resolve(body.byteLength > length ? rangeOfBody(key, body, undefined, offset, length) : body);
            });
        });
      } catch (err) {
        if (isMissingObject(err)) return null;
        // The range starts past the end of the object.
        if (statusOf(err) === 416) return new Uint8Array(0);
        throw err;
      }
    });
  }

  async put(key: string, body: Uint8Array, opts: PutOptions = {}): Promise<{ etag: string }> {
    validateObjectKey(key);
    const createOnly = opts.ifNoneMatch === "*";
    // A private copy keeps a caller's later mutation out of the request.
    const payload = Buffer.from(body);
    const md5Hash = createHash("md5").update(payload).digest("base64");
    const bucket = await this.#bucket();
    let mayHaveLanded = false;
    return this.#withRetries("put", key, async () => {
      const file = bucket.file(this.prefix + key);
      try {
        await file.save(payload, {
          resumable: false,
          // The service checks md5Hash; the SDK's own check would delete the object on a mismatch.
          validation: false,
          metadata: { contentType: "application/octet-stream", md5Hash },
          ...(createOnly ? { preconditionOpts: { ifGenerationMatch: 0 } } : {}),
        });
        return { etag: String(file.metadata.generation ?? "") };
      } catch (err) {
        if (createOnly && statusOf(err) === 412) {
          // An earlier attempt that failed in transit may have created the
          // object; finding our own bytes there means that attempt won.
          if (mayHaveLanded) {
            const existing = await this.#getOnce(bucket, key);
            if (existing && bytesEqual(existing.body, payload)) return { etag: existing.etag };
          }
          throw new PreconditionFailedError(key);
        }
        mayHaveLanded = true;
        throw err;
      }
    });
  }

  async delete(key: string): Promise<void> {
    validateObjectKey(key);
    const bucket = await this.#bucket();
    await this.#withRetries("delete", key, async () => {
      try {
        await bucket.file(this.prefix + key).delete();
      } catch (err) {
        if (isMissingObject(err)) return;
        throw err;
      }
    });
  }

  list(prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
    const ordered = inUtf8Order(this.#listPages(prefix, opts.startAfter), `bucket "${this.bucket}"`, prefix);
    return opts.startAfter === undefined ? ordered : skipThrough(ordered, Buffer.from(opts.startAfter, "utf8"));
  }

  /** Every object under `prefix` from `startAfter` on (inclusive), a page per request. */
  async *#listPages(prefix: string, startAfter: string | undefined): AsyncIterable<ListedObject> {
    const bucket = await this.#bucket();
    let pageToken: string | undefined;
    // Only its token, progress and repeat checks: this listing's keys are put in order and skipped through start-after below.
    const pages = new ListingPages(`bucket "${this.bucket}"`, "", prefix, undefined);
    do {
      const token = pageToken;
      const [files, next] = await this.#withRetries("list", prefix, () =>
        bucket.getFiles({
          prefix: this.prefix + prefix,
          autoPaginate: false,
          maxResults: this.#pageSize,
          ...(token !== undefined ? { pageToken: token } : {}),
          // startOffset is inclusive; skipThrough drops the key itself.
          ...(startAfter !== undefined ? { startOffset: this.prefix + startAfter } : {}),
        }),
      );
      for (const file of files) {
        if (pages.listedAgain(file.name) || !file.name.startsWith(this.prefix)) continue;
        yield { key: file.name.slice(this.prefix.length), size: Number(file.metadata.size ?? 0) };
      }
      const nextToken = (next as { pageToken?: unknown } | null | undefined)?.pageToken;
      pageToken = typeof nextToken === "string" && nextToken !== "" ? nextToken : undefined;
      pages.next(pageToken !== undefined, pageToken);
    } while (pageToken !== undefined);
  }

  async #getOnce(bucket: Bucket, key: string): Promise<StoredObject | null> {
    const file = bucket.file(this.prefix + key);
    try {
      return await new Promise<StoredObject>((resolve, reject) => {
        let generation = "";
        const chunks: Buffer[] = [];
        file
          .createReadStream()
          .on("response", (res: { headers?: Record<string, unknown> }) => {
            const header = res.headers?.["x-goog-generation"];
            generation = typeof header === "string" ? header : "";
          })
          .on("data", (chunk: Buffer) => chunks.push(chunk))
          .on("error", reject)
          .on("end", () => {
            const all = Buffer.concat(chunks);
            resolve({ body: new Uint8Array(all.buffer, all.byteOffset, all.byteLength), etag: generation });
          });
      });
    } catch (err) {
      if (isMissingObject(err)) return null;
      throw err;
    }
  }

  #bucket(): Promise<Bucket> {
    this.#client ??= this.#connect();
    // A failed load is not cached, so installing the package fixes the next call.
    this.#client.catch(() => (this.#client = undefined));
    return this.#client;
  }

  async #connect(): Promise<Bucket> {
    const sdk = await loadOptionalPackage<GcsSdk>("@google-cloud/storage", "GcsStore");
    const opts = this.#options;
    const storageOptions: StorageOptions = {
      // This store retries; the SDK's own retries would multiply its attempts.
      retryOptions: { autoRetry: false, maxRetries: 0 },
      timeout: this.#timeoutMs,
      ...(opts.projectId !== undefined ? { projectId: opts.projectId } : {}),
      ...(opts.keyFilename !== undefined ? { keyFilename: opts.keyFilename } : {}),
      ...(this.apiEndpoint !== undefined ? { apiEndpoint: this.apiEndpoint } : {}),
    };
    return new sdk.Storage(storageOptions).bucket(this.bucket);
  }

  #withRetries<T>(operation: string, key: string, attempt: () => Promise<T>): Promise<T> {
    const where = `bucket "${this.bucket}"`;
    const judge: FailureJudge = {
      retryable: isRetryableGcsError,
      giveUp: (err, attempts) => {
        if (isRetryableGcsError(err)) return new StoreUnavailableError(`GCS ${operation} (${where}, attempt ${attempts})`, key, err);
        return new StoreRequestError(`GCS ${operation}`, key, explainPermanent(err, where), err);
      },
    };
    return retryRequest(this.#retry, judge, attempt);
  }
}

/** The user-facing reason for a failure retrying cannot fix. */
function explainPermanent(err: unknown, where: string): string {
  const status = statusOf(err);
  const reason = reasonOf(err);
  const raw = err instanceof Error ? err.message.split("\n")[0] : String(err);
  if (isMissingBucket(err)) return `${where} does not exist; create it first`;
  if (status === 401 || status === 403) {
    return `${where} refused the credentials (${status}${reason ? ` ${reason}` : ""}: ${raw}); check Application Default Credentials and the principal's role (Storage Object User)`;
  }
  return `${where} answered ${status ?? "an error"}${reason ? ` ${reason}` : ""}: ${raw}`;
}
