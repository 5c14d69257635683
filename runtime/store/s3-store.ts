/**
 * @module An object store in an S3 bucket, or any service speaking the S3
 * protocol (MinIO, R2, GCS interoperability, Ceph...).
 *
 * Create-if-absent is `If-None-Match: *` on PutObject. Services answer a lost
 * race with 412 PreconditionFailed, and some answer 409
 * ConditionalRequestConflict while another conditional write to the key is
 * in flight; both become `PreconditionFailedError`. Requests that fail with
 * 5xx, throttling or a network error are retried through the store layer's
 * one backoff loop (retry.ts), then surface as `StoreUnavailableError`.
 */
import { ListingPages } from "./listing-pages.js";
import { copyBytes } from "../bytes.js";
import { createS3Client } from "./s3-client.js";
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { MAX_TIMEOUT_MS } from "../clock.js";
import { PreconditionFailedError, StoreUnavailableError, TaqubaError, ValidationError } from "../errors.js";
import { bytesEqual } from "./bytes-equal.js";
import { validateObjectKey } from "./keys.js";
import { isNetworkError, retrySettings, retryableUnlessUnreadable } from "./request-retry.js";
import { retryWithBackoff } from "./retry.js";
import {
  bodyStart,
  checkRange,
  checkRangeInto,
  rangeOfBody,
  type ListOptions,
  type ListedObject,
  type ObjectStore,
  type PutOptions,
  type StoredObject,
} from "./object-store.js";
import { checkOptionalString, describeValue, hasMethods, isOptionObject, optionFields, quoteValue, readExactOptions } from "../option-values.js";
import { declareBuiltInStore } from "./own-state.js";

/** How failed requests are retried. */
export interface S3RetryOptions {
  /** Attempts per request, the first included: an integer from 1 to 100. Default 6. */
  maxAttempts?: number;
  /** Backoff before the second attempt; doubles each time. Default 50 ms. */
  baseDelayMs?: number;
  /** Cap on one backoff. Default 2,000 ms. */
  maxDelayMs?: number;
  /**
   * Bound on one attempt, response body included. A server that accepts the
   * connection and never answers fails the attempt, which is then retried.
   * Default 30,000 ms.
   */
  attemptTimeoutMs?: number;
}

/** Options of `S3Store`. */
export interface S3StoreOptions {
  /** The bucket; it must exist. */
  bucket: string;
  /** Key prefix inside the bucket, e.g. `"tenants/a"`; a trailing `/` is implied. */
  prefix?: string;
  /** A client to use as is. When absent, one is made from `clientConfig`. */
  client?: S3Client;
  /**
   * Configuration of the client this store makes: `region`, `endpoint`,
   * `forcePathStyle`, `credentials`... Credentials default to the SDK's
   * default chain (environment, shared files, instance roles). The SDK's own
   * retries are off by default (`maxAttempts: 1`) because this store retries.
   */
  clientConfig?: S3ClientConfig;
  retry?: S3RetryOptions;
}

const S3_OPTION_FIELDS = optionFields<S3StoreOptions>({ bucket: true, prefix: true, client: true, clientConfig: true, retry: true });
const S3_RETRY_FIELDS = optionFields<S3RetryOptions>({ maxAttempts: true, baseDelayMs: true, maxDelayMs: true, attemptTimeoutMs: true });

const THROTTLING_NAMES = new Set(["SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestThrottled", "TooManyRequests"]);

interface SdkErrorShape {
  name?: string;
  code?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

function statusOf(err: unknown): number | undefined {
  return typeof err === "object" && err !== null ? (err as SdkErrorShape).$metadata?.httpStatusCode : undefined;
}

function nameOf(err: unknown): string {
  if (typeof err !== "object" || err === null) return "";
  const e = err as SdkErrorShape;
  return e.Code ?? e.name ?? "";
}

/** Whether repeating the request may succeed: server errors, throttling, network failures. */
export function isRetryableS3Error(err: unknown): boolean {
  return retryableUnlessUnreadable(retryableS3, err);
}

function retryableS3(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const status = statusOf(err);
  if (status !== undefined && (status >= 500 || status === 429)) return true;
  if (THROTTLING_NAMES.has(nameOf(err))) return true;
  if ((err as SdkErrorShape).$retryable) return true;
  // No answer at all: the same network failures every cloud store retries.
  if (status === undefined && isNetworkError(err)) return true;
  return false;
}

function isPreconditionFailure(err: unknown): boolean {
  const status = statusOf(err);
  const name = nameOf(err);
  return status === 412 || name === "PreconditionFailed" || (status === 409 && name === "ConditionalRequestConflict") || name === "ConditionalRequestConflict";
}

function isNotFound(err: unknown): boolean {
  return nameOf(err) === "NoSuchKey" || (statusOf(err) === 404 && nameOf(err) !== "NoSuchBucket");
}

/** `p`, or a rejection as soon as `signal` aborts (a body read the SDK does not bound). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Copies a response body into `into`, leaving out its first `skip` bytes
 * and what passes the end of `into`. Once `signal` aborts (the attempt timed
 * out and the caller may already be retrying into the same buffer) nothing
 * more is written and the stream is dropped.
 */
async function copyBody(body: AsyncIterable<Uint8Array>, into: Uint8Array, skip: number, signal: AbortSignal): Promise<{ copied: number; received: number }> {
  let received = 0;
  let copied = 0;
  for await (const chunk of body) {
    if (signal.aborted) throw signal.reason;
    const from = Math.max(0, skip - received);
    received += chunk.byteLength;
    const room = into.byteLength - copied;
    if (from < chunk.byteLength && room > 0) {
      const part = chunk.subarray(from, Math.min(chunk.byteLength, from + room));
      into.set(part, copied);
      copied += part.byteLength;
    }
  }
  return { copied, received };
}

/**
 * A store whose objects live under a prefix of one S3 bucket.
 *
 * @example
 * const store = new S3Store({ bucket: "my-bucket", prefix: "taquba/prod", clientConfig: { region: "eu-west-1" } });
 */
export class S3Store implements ObjectStore {
  // Its methods read private fields, so they work only on the store itself: store checks refuse a wrapper that would call them on itself.
  static {
    declareBuiltInStore(S3Store.prototype, "S3Store", (value) => #maxAttempts in value);
  }

  readonly bucket: string;
  /** Prefix added to every key: `""` or ending in `/`. */
  readonly prefix: string;
  readonly client: S3Client;
  readonly #maxAttempts: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #attemptTimeoutMs: number;

  constructor(given: S3StoreOptions) {
    // Each option read once: a getter or Proxy that throws is refused by name, never a TypeError.
    const opts = readExactOptions(given, S3_OPTION_FIELDS, "S3StoreOptions");
    if (typeof opts.bucket !== "string" || !/^[a-zA-Z0-9][a-zA-Z0-9._-]{1,254}$/.test(opts.bucket)) {
      throw new ValidationError(`S3Store: invalid bucket name ${quoteValue(opts.bucket)}; use letters, digits, '.', '-' or '_'`);
    }
    this.bucket = opts.bucket;
    checkOptionalString("S3StoreOptions.prefix", opts.prefix);
    const prefix = (opts.prefix ?? "").replace(/\/+$/, "");
    if (prefix !== "") validateObjectKey(prefix);
    this.prefix = prefix === "" ? "" : `${prefix}/`;
    if (opts.client !== undefined && !hasMethods(opts.client, ["send"]))
      throw new ValidationError(`S3StoreOptions.client must be an S3Client (with send()), got ${describeValue(opts.client)}`);
    // A string here would be spread into one property per character.
    if (opts.clientConfig !== undefined && !isOptionObject(opts.clientConfig))
      throw new ValidationError(`S3StoreOptions.clientConfig must be an object (an S3ClientConfig), got ${describeValue(opts.clientConfig)}`);
    this.client = (opts.client as S3Client | undefined) ?? createS3Client({ maxAttempts: 1, ...(opts.clientConfig as S3ClientConfig | undefined) });
    const retry = readExactOptions(opts.retry ?? {}, S3_RETRY_FIELDS, "S3StoreOptions.retry") as S3RetryOptions;
    // The attempts and delays as every HTTP store takes them (at most 100 attempts, finite delays).
    // Without the timeout, which is S3's own: the shared check refuses a field it does not take.
    const { attemptTimeoutMs: _ownTimeout, ...sharedRetry } = retry;
    const shared = retrySettings("S3Store", sharedRetry);
    this.#maxAttempts = shared.maxAttempts;
    this.#baseDelayMs = shared.baseDelayMs;
    this.#maxDelayMs = shared.maxDelayMs;
    this.#attemptTimeoutMs = retry.attemptTimeoutMs ?? 30_000;
    if (!(Number.isInteger(this.#attemptTimeoutMs) && this.#attemptTimeoutMs >= 1 && this.#attemptTimeoutMs <= MAX_TIMEOUT_MS)) {
      throw new ValidationError(
        `S3Store: retry.attemptTimeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, got ${describeValue(retry.attemptTimeoutMs)}`,
      );
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    validateObjectKey(key);
    return this.#withRetries("get", key, (signal) => this.#getOnce(key, signal));
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    validateObjectKey(key);
    checkRange(offset, length);
    return this.#withRetries("get", key, async (signal) => {
      try {
        const res = await this.client.send(
          new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Range: `bytes=${offset}-${offset + length - 1}` }),
          {
            abortSignal: signal,
          },
        );
        const body = res.Body ? await untilAborted(res.Body.transformToByteArray(), signal) : new Uint8Array(0);
        if (res.ContentLength !== undefined && body.byteLength !== res.ContentLength) {
          throw Object.assign(new Error(`the body ended after ${body.byteLength} of ${res.ContentLength} bytes`), { code: "ECONNRESET" });
        }
        return rangeOfBody(key, body, res.ContentRange, offset, length);
      } catch (err) {
        if (isNotFound(err)) return null;
        // The range starts past the end of the object.
        if (statusOf(err) === 416 || nameOf(err) === "InvalidRange") return new Uint8Array(0);
        throw err;
      }
    });
  }

  async getRangeInto(key: string, offset: number, into: Uint8Array): Promise<number | null> {
    validateObjectKey(key);
    checkRangeInto(offset, into);
    // S3 has no empty range: ask for one byte to tell an absent object from a present one.
    if (into.byteLength === 0) return (await this.getRange(key, offset, 1)) === null ? null : 0;
    return this.#withRetries("get", key, async (signal) => {
      try {
        const res = await this.client.send(
          new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Range: `bytes=${offset}-${offset + into.byteLength - 1}` }),
          { abortSignal: signal },
        );
        const skip = offset - bodyStart(key, res.ContentRange, offset);
        if (!res.Body) return 0;
        const { copied, received } = await untilAborted(copyBody(res.Body as unknown as AsyncIterable<Uint8Array>, into, skip, signal), signal);
        if (res.ContentLength !== undefined && received !== res.ContentLength) {
          throw Object.assign(new Error(`the body ended after ${received} of ${res.ContentLength} bytes`), { code: "ECONNRESET" });
        }
        return copied;
      } catch (err) {
        if (isNotFound(err)) return null;
        if (statusOf(err) === 416 || nameOf(err) === "InvalidRange") return 0;
        throw err;
      }
    });
  }

  async put(key: string, body: Uint8Array, opts: PutOptions = {}): Promise<{ etag: string }> {
    validateObjectKey(key);
    const createOnly = opts.ifNoneMatch === "*";
    // The SDK may read the body after this call returns control; a private
    // copy keeps a caller's later mutation out of the request.
    const payload = copyBytes(body);
    let mayHaveLanded = false;
    return this.#withRetries("put", key, async (signal) => {
      try {
        const res = await this.client.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: this.prefix + key,
            Body: payload,
            ContentLength: payload.byteLength,
            ...(createOnly ? { IfNoneMatch: "*" } : {}),
          }),
          { abortSignal: signal },
        );
        return { etag: res.ETag ?? "" };
      } catch (err) {
        if (createOnly && isPreconditionFailure(err)) {
          // An earlier attempt that failed in transit may have created the
          // object; finding our own bytes there means that attempt won.
          if (mayHaveLanded) {
            const existing = await this.#getOnce(key, signal);
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
    await this.#withRetries("delete", key, async (signal) => {
      try {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }), { abortSignal: signal });
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
    });
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
    let continuationToken: string | undefined;
    const startAfter = opts.startAfter === undefined ? undefined : this.prefix + opts.startAfter;
    // What the service lists is checked against what was asked: some S3-compatible services ignore parts of it.
    const pages = new ListingPages(`bucket "${this.bucket}"`, this.prefix + prefix, prefix, startAfter);
    do {
      const token = continuationToken;
      const page = await this.#withRetries("list", prefix, (signal) =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix + prefix,
            ...(token !== undefined ? { ContinuationToken: token } : startAfter !== undefined ? { StartAfter: startAfter } : {}),
          }),
          { abortSignal: signal },
        ),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || !pages.take(object.Key)) continue;
        yield { key: object.Key.slice(this.prefix.length), size: object.Size ?? 0 };
      }
      continuationToken = pages.next(page.IsTruncated === true, page.NextContinuationToken);
    } while (continuationToken !== undefined);
  }

  async #getOnce(key: string, signal: AbortSignal): Promise<StoredObject | null> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }), { abortSignal: signal });
      const body = res.Body ? await untilAborted(res.Body.transformToByteArray(), signal) : new Uint8Array(0);
      // A body shorter than announced is a transfer cut short, never an object.
      if (res.ContentLength !== undefined && body.byteLength !== res.ContentLength) {
        throw Object.assign(new Error(`the body ended after ${body.byteLength} of ${res.ContentLength} bytes`), { code: "ECONNRESET" });
      }
      return { body, etag: res.ETag ?? "" };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  /**
   * Runs `attempt` through the shared backoff loop (retry.ts) until it succeeds, throws a
   * non-retryable error, or runs out of attempts; each attempt is cut off after
   * `attemptTimeoutMs` (a server that accepts and never answers must not hang the caller).
   */
  async #withRetries<T>(operation: string, key: string, attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
    let n = 0;
    const policy = { attempts: this.#maxAttempts, baseDelayMs: this.#baseDelayMs, maxDelayMs: this.#maxDelayMs };
    try {
      return await retryWithBackoff(
        policy,
        (err) => !(err instanceof TaqubaError) && isRetryableS3Error(err),
        async (i) => {
          n = i;
          const signal = AbortSignal.timeout(this.#attemptTimeoutMs);
          try {
            return await attempt(signal);
          } catch (caught) {
            if (caught instanceof TaqubaError || !signal.aborted) throw caught;
            throw Object.assign(new Error(`no complete answer within ${this.#attemptTimeoutMs} ms`), { name: "TimeoutError", cause: caught });
          }
        },
      );
    } catch (err) {
      if (err instanceof TaqubaError) throw err;
      throw new StoreUnavailableError(`S3 ${operation} (bucket ${this.bucket}, attempt ${n})`, this.prefix + key, err);
    }
  }
}
