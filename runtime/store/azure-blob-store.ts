/**
 * @module An object store in an Azure Blob Storage container (or Azurite),
 * over the optional package `@azure/storage-blob`.
 *
 * Create-if-absent is Put Blob with `If-None-Match: *`; the service answers
 * a lost race with 409 BlobAlreadyExists or 412 ConditionNotMet, both
 * `PreconditionFailedError`. Listing is List Blobs (`listBlobsFlat`) by
 * prefix, which the service returns in name order (Azurite sorts by UTF-16
 * code units; `inUtf8Order` fixes that up); List Blobs has no start-after,
 * so keys up to `startAfter` are read and skipped here; a marker answered
 * twice in one listing refuses it (`StoreRequestError`). Throttling (503
 * ServerBusy, 429), other 5xx and network failures are retried with backoff;
 * a missing container, refused credentials and bad requests are permanent
 * `StoreRequestError`s naming the account and container.
 */
import type { ContainerClient, RestError, StoragePipelineOptions } from "@azure/storage-blob";
import { PreconditionFailedError, StoreRequestError, StoreUnavailableError, ValidationError } from "../errors.js";
import { checkOptionalString, describeValue, hasMethods, optionFields, quoteValue, readExactOptions } from "../option-values.js";
import { bytesEqual } from "./bytes-equal.js";
import { validateObjectKey } from "./keys.js";
import { checkRange, rangeOfBody, type ListOptions, type ListedObject, type ObjectStore, type PutOptions, type StoredObject } from "./object-store.js";
import { skipThrough } from "./skip-through.js";
import { inUtf8Order } from "./utf8-order.js";
import { ListingPages } from "./listing-pages.js";
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
import { declareBuiltInStore } from "./own-state.js";

type BlobSdk = typeof import("@azure/storage-blob");

/** What `@azure/identity`'s credentials provide (`TokenCredential` of `@azure/core-auth`). */
export interface AzureTokenCredential {
  getToken(scopes: string | string[], options?: object): Promise<{ token: string; expiresOnTimestamp: number } | null>;
}

/** Options of `AzureBlobStore`: a container plus exactly one way to authenticate. */
export interface AzureBlobStoreOptions {
  /** The container; it must exist. */
  container: string;
  /** Key prefix inside the container, e.g. `"tenants/a"`; a trailing `/` is implied. */
  prefix?: string;
  /** A storage connection string (account, key or SAS, endpoints); Azurite's works too. */
  connectionString?: string;
  /** The storage account name; needed unless `connectionString` is given. */
  account?: string;
  /** The account's shared key, with `account`. */
  accountKey?: string;
  /**
   * A token credential, e.g. `new DefaultAzureCredential()` from
   * `@azure/identity`. When neither a connection string, a key nor a
   * credential is given, `DefaultAzureCredential` is loaded from that package.
   */
  credential?: AzureTokenCredential;
  /**
   * The Blob service URL. Default `https://<account>.blob.core.windows.net`.
   * For Azurite: `http://127.0.0.1:10000/<account>`; an endpoint without a
   * path gets `/<account>` appended (the emulator's path style).
   */
  endpoint?: string;
  retry?: StoreRetryOptions;
  /** Blobs per List Blobs request, 1 to 5,000. Default 5,000. */
  listPageSize?: number;
  /** Longest wait for one request before it counts as failed (and is retried). Default 60,000 ms. */
  requestTimeoutMs?: number;
}

/** Azurite's published development account and key, the same in every install. */
export const AZURITE_ACCOUNT = "devstoreaccount1";
export const AZURITE_ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const CONTAINER_NAME = /^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$/;
const ACCOUNT_NAME = /^[a-z0-9]{3,24}$/;
const PAGE_SIZE = 5000;
/** The order the service lists blob names in: UTF-16 code units (see `inUtf8Order`). */
const inUtf16Order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Rejects keys Azure may read as another blob: Azure's naming rules say no
 * path segment should end with a dot, and URL normalisation on the way can
 * drop such dots, so "a." and "a" could name one blob.
 */
function validateAzureKey(key: string): void {
  validateObjectKey(key);
  if (key.split("/").some((segment) => segment.endsWith("."))) {
    throw new ValidationError(
      `invalid object key ${JSON.stringify(key)} for Azure Blob Storage: a path segment ends with '.', which Azure may drop; keep trailing dots out of key segments`,
    );
  }
}

function errorCode(err: unknown): string {
  if (typeof err !== "object" || err === null) return "";
  const e = err as Partial<RestError> & { details?: { errorCode?: unknown } };
  const detailed = e.details?.errorCode;
  return typeof detailed === "string" ? detailed : typeof e.code === "string" ? e.code : "";
}

function statusOf(err: unknown): number | undefined {
  const status = typeof err === "object" && err !== null ? (err as { statusCode?: unknown }).statusCode : undefined;
  return typeof status === "number" ? status : undefined;
}

/** Whether repeating the request may succeed: throttling, server errors, network failures. */
export function isRetryableAzureError(err: unknown): boolean {
  return retryableUnlessUnreadable(retryableAzure, err);
}

function retryableAzure(err: unknown): boolean {
  const status = statusOf(err);
  if (status !== undefined)
    return status >= 500 || status === 429 || status === 408 || errorCode(err) === "ServerBusy" || errorCode(err) === "OperationTimedOut";
  return isNetworkError(err);
}

function isCreateConflict(err: unknown): boolean {
  const code = errorCode(err);
  return (statusOf(err) === 412 && code !== "LeaseIdMissing") || code === "BlobAlreadyExists" || code === "ConditionNotMet";
}

const AZURE_OPTION_KEYS = optionFields<AzureBlobStoreOptions>({
  container: true,
  prefix: true,
  connectionString: true,
  account: true,
  accountKey: true,
  credential: true,
  endpoint: true,
  retry: true,
  listPageSize: true,
  requestTimeoutMs: true,
});

/**
 * A store whose blobs live under a prefix of one Azure container.
 *
 * The SDK is loaded on first use; without `@azure/storage-blob` installed,
 * that first call fails with `MissingDependencyError`.
 *
 * @example
 * const store = new AzureBlobStore({ account: "myaccount", container: "taquba", prefix: "prod" });
 */
export class AzureBlobStore implements ObjectStore {
  // Its methods read private fields, so they work only on the store itself: store checks refuse a wrapper that would call them on itself.
  static {
    declareBuiltInStore(AzureBlobStore.prototype, "AzureBlobStore", (value) => #options in value);
  }

  readonly container: string;
  /** Prefix added to every key: `""` or ending in `/`. */
  readonly prefix: string;
  /** The account name, when known before connecting (not from a connection string). */
  readonly account: string | undefined;
  /** The Blob service URL, when known before connecting. */
  readonly endpoint: string | undefined;
  readonly #options: AzureBlobStoreOptions;
  readonly #retry: RetrySettings;
  readonly #pageSize: number;
  readonly #timeoutMs: number;
  #client: Promise<ContainerClient> | undefined;

  constructor(given: AzureBlobStoreOptions) {
    // Each option read once: a getter or Proxy that throws is refused by name, never a TypeError.
    const opts = readExactOptions(given, AZURE_OPTION_KEYS, "AzureBlobStoreOptions") as AzureBlobStoreOptions;
    for (const k of ["prefix", "account", "accountKey", "endpoint"] as const) checkOptionalString(`AzureBlobStoreOptions.${k}`, opts[k]);
    if (opts.credential !== undefined && !hasMethods(opts.credential, ["getToken"]))
      throw new ValidationError(`AzureBlobStoreOptions.credential must be a token credential (with getToken()), got ${describeValue(opts.credential)}`);
    if (typeof opts.container !== "string" || !CONTAINER_NAME.test(opts.container)) {
      throw new ValidationError(
        `AzureBlobStore: invalid container name ${quoteValue(opts.container)}; use 3 to 63 lowercase letters, digits and single '-' between them`,
      );
    }
    const ways = [opts.connectionString, opts.accountKey, opts.credential].filter((w) => w !== undefined).length;
    if (ways > 1) throw new ValidationError("AzureBlobStore: give at most one of connectionString, accountKey and credential");
    if (opts.connectionString === undefined) {
      if (typeof opts.account !== "string" || !ACCOUNT_NAME.test(opts.account)) {
        throw new ValidationError(`AzureBlobStore: invalid account name ${quoteValue(opts.account)}; use 3 to 24 lowercase letters and digits`);
      }
    } else if (typeof opts.connectionString !== "string" || opts.connectionString.trim() === "") {
      throw new ValidationError("AzureBlobStore: connectionString is empty");
    }
    this.container = opts.container;
    const prefix = (opts.prefix ?? "").replace(/\/+$/, "");
    if (prefix !== "") validateAzureKey(prefix);
    this.prefix = prefix === "" ? "" : `${prefix}/`;
    this.account = opts.connectionString === undefined ? opts.account : undefined;
    this.endpoint = this.account === undefined ? undefined : serviceUrl(this.account, opts.endpoint);
    this.#options = opts;
    this.#retry = retrySettings("AzureBlobStore", opts.retry);
    this.#timeoutMs = requestTimeout("AzureBlobStore", opts.requestTimeoutMs);
    this.#pageSize = listPageSize("AzureBlobStore", opts.listPageSize, PAGE_SIZE);
  }

  async get(key: string): Promise<StoredObject | null> {
    validateAzureKey(key);
    const client = await this.#containerClient();
    return this.#withRetries("get", key, () => this.#getOnce(client, key));
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    validateAzureKey(key);
    checkRange(offset, length);
    const client = await this.#containerClient();
    return this.#withRetries("get", key, async () => {
      try {
        const res = await client.getBlobClient(this.prefix + key).download(offset, length, { abortSignal: this.#deadline() });
        const body = res.readableStreamBody ? await readAll(res.readableStreamBody) : new Uint8Array(0);
        return rangeOfBody(key, body, res.contentRange, offset, length);
      } catch (err) {
        if (errorCode(err) === "BlobNotFound") return null;
        // The range starts past the end of the blob.
        if (statusOf(err) === 416 || errorCode(err) === "InvalidRange") return new Uint8Array(0);
        throw err;
      }
    });
  }

  async put(key: string, body: Uint8Array, opts: PutOptions = {}): Promise<{ etag: string }> {
    validateAzureKey(key);
    const createOnly = opts.ifNoneMatch === "*";
    // A private copy keeps a caller's later mutation out of the request.
    const payload = Buffer.from(body);
    const client = await this.#containerClient();
    const blob = client.getBlockBlobClient(this.prefix + key);
    let mayHaveLanded = false;
    return this.#withRetries("put", key, async () => {
      try {
        const res = await blob.upload(payload, payload.byteLength, {
          abortSignal: this.#deadline(),
          ...(createOnly ? { conditions: { ifNoneMatch: "*" } } : {}),
        });
        return { etag: res.etag ?? "" };
      } catch (err) {
        if (createOnly && isCreateConflict(err)) {
          // An earlier attempt that failed in transit may have created the
          // blob; finding our own bytes there means that attempt won.
          if (mayHaveLanded) {
            const existing = await this.#getOnce(client, key);
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
    validateAzureKey(key);
    const client = await this.#containerClient();
    await this.#withRetries("delete", key, async () => {
      try {
        await client.getBlobClient(this.prefix + key).delete({ deleteSnapshots: "include", abortSignal: this.#deadline() });
      } catch (err) {
        if (errorCode(err) === "BlobNotFound") return;
        throw err;
      }
    });
  }

  list(prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
    const startAfter = opts.startAfter === undefined ? undefined : Buffer.from(opts.startAfter, "utf8");
    const ordered = inUtf8Order(this.#listPages(prefix), this.#where(), prefix);
    return startAfter === undefined ? ordered : skipThrough(ordered, startAfter);
  }

  /** Every blob under `prefix`, in the service's order, a page per request. */
  async *#listPages(prefix: string): AsyncIterable<ListedObject> {
    const client = await this.#containerClient();
    let marker: string | undefined;
    // Only its token, progress and repeat checks: this listing's keys are put in order and skipped through start-after in `list`.
    const pages = new ListingPages(this.#where(), "", prefix, undefined, inUtf16Order);
    do {
      const token = marker;
      const page = await this.#withRetries("list", prefix, async () => {
        const pages = client
          .listBlobsFlat({ prefix: this.prefix + prefix, abortSignal: this.#deadline() })
          .byPage({ maxPageSize: this.#pageSize, ...(token ? { continuationToken: token } : {}) });
        const next = await pages.next();
        return next.done ? undefined : next.value;
      });
      for (const item of page?.segment.blobItems ?? []) {
        if (pages.listedAgain(item.name) || !item.name.startsWith(this.prefix)) continue;
        yield { key: item.name.slice(this.prefix.length), size: item.properties.contentLength ?? 0 };
      }
      marker = page?.continuationToken || undefined;
      // A service that ignores the marker answers the first page again, with the same one, for ever.
      pages.next(marker !== undefined, marker);
    } while (marker !== undefined);
  }

  async #getOnce(client: ContainerClient, key: string): Promise<StoredObject | null> {
    try {
      const res = await client.getBlobClient(this.prefix + key).download(0, undefined, { abortSignal: this.#deadline() });
      const body = res.readableStreamBody ? await readAll(res.readableStreamBody) : new Uint8Array(0);
      return { body, etag: res.etag ?? "" };
    } catch (err) {
      if (errorCode(err) === "BlobNotFound") return null;
      throw err;
    }
  }

  /** A signal that aborts one request (its body included) once it has taken longer than the request timeout. */
  #deadline(): AbortSignal {
    return AbortSignal.timeout(this.#timeoutMs);
  }

  #containerClient(): Promise<ContainerClient> {
    this.#client ??= this.#connect();
    // A failed connection (say, @azure/identity missing) is not cached, so a fixed environment works on the next call.
    this.#client.catch(() => (this.#client = undefined));
    return this.#client;
  }

  async #connect(): Promise<ContainerClient> {
    const sdk = await loadOptionalPackage<BlobSdk>("@azure/storage-blob", "AzureBlobStore");
    // This store retries; the SDK's own retries would multiply its attempts.
    const pipeline: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };
    const opts = this.#options;
    if (opts.connectionString !== undefined) {
      let service;
      try {
        service = sdk.BlobServiceClient.fromConnectionString(opts.connectionString, pipeline);
      } catch (err) {
        throw new ValidationError(`AzureBlobStore: the connection string is not usable (${err instanceof Error ? err.message : String(err)})`);
      }
      return service.getContainerClient(this.container);
    }
    const account = this.account!;
    const url = this.endpoint!;
    let credential: InstanceType<BlobSdk["StorageSharedKeyCredential"]> | AzureTokenCredential;
    if (opts.accountKey !== undefined) credential = new sdk.StorageSharedKeyCredential(account, opts.accountKey);
    else if (opts.credential !== undefined) credential = opts.credential;
    else {
      const identity = await loadOptionalPackage<{ DefaultAzureCredential: new () => AzureTokenCredential }>(
        "@azure/identity",
        "AzureBlobStore without a connection string, account key or credential (DefaultAzureCredential)",
      );
      credential = new identity.DefaultAzureCredential();
    }
    return new sdk.BlobServiceClient(url, credential, pipeline).getContainerClient(this.container);
  }

  #where(): string {
    return this.account === undefined ? `container "${this.container}"` : `container "${this.container}" of account "${this.account}"`;
  }

  #withRetries<T>(operation: string, key: string, attempt: () => Promise<T>): Promise<T> {
    const where = this.#where();
    const judge: FailureJudge = {
      retryable: isRetryableAzureError,
      giveUp: (err, attempts) => {
        if (isRetryableAzureError(err)) return new StoreUnavailableError(`Azure ${operation} (${where}, attempt ${attempts})`, key, err);
        return new StoreRequestError(`Azure ${operation}`, key, explainPermanent(err, where), err);
      },
    };
    return retryRequest(this.#retry, judge, attempt);
  }
}

/** The user-facing reason for a failure retrying cannot fix. */
function explainPermanent(err: unknown, where: string): string {
  const code = errorCode(err);
  const status = statusOf(err);
  const raw = err instanceof Error ? err.message.split("\n")[0] : String(err);
  if (code === "ContainerNotFound") return `${where} does not exist; create it first`;
  if (status === 401 || status === 403 || /^Authentication|^Authorization|InvalidAuthenticationInfo/.test(code)) {
    return `${where} refused the credentials (${code || status}); check the account key, connection string or the identity's role (Storage Blob Data Contributor)`;
  }
  if (status === 404) return `${where} answered 404 (${code || "not found"}); check the account and endpoint`;
  return `${where} answered ${status ?? "an error"}${code ? ` ${code}` : ""}: ${raw}`;
}

function serviceUrl(account: string, endpoint: string | undefined): string {
  if (endpoint === undefined) return `https://${account}.blob.core.windows.net`;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ValidationError(`AzureBlobStore: endpoint ${JSON.stringify(endpoint)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new ValidationError(`AzureBlobStore: endpoint ${JSON.stringify(endpoint)} must be http or https`);
  if (url.search !== "" || url.hash !== "") throw new ValidationError(`AzureBlobStore: endpoint ${JSON.stringify(endpoint)} takes no query or fragment`);
  const base = url.href.replace(/\/+$/, "");
  return url.pathname === "/" && !url.hostname.startsWith(`${account}.`) ? `${base}/${account}` : base;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  const all = Buffer.concat(chunks);
  return new Uint8Array(all.buffer, all.byteOffset, all.byteLength);
}
