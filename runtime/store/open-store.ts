/**
 * @module Opens a store from a URL, so programs and command lines can pick
 * memory, a directory or a bucket with one string.
 *
 * - `memory://`: a fresh `MemoryStore` (nothing survives the process).
 * - `file:///absolute/dir`: a `LocalStore` in that directory.
 * - `s3://bucket/optional/prefix`: an `S3Store`. The endpoint comes from the
 *   `endpoint` query option, else `AWS_ENDPOINT_URL_S3`, else
 *   `AWS_ENDPOINT_URL`, else AWS itself; the region from `region`, else
 *   `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the SDK's default chain.
 *   Path-style addressing (`forcePathStyle`) defaults to on when a custom
 *   endpoint is set, since most S3-compatible services need it, and off
 *   for AWS. Credentials come from the SDK's default chain.
 * - `azure://account/container/optional/prefix`: an `AzureBlobStore`. The
 *   `endpoint` option names another Blob service URL (Azurite:
 *   `?endpoint=http://127.0.0.1:10000`). Credentials: the environment's
 *   `AZURE_STORAGE_CONNECTION_STRING` when it names the same account and no
 *   endpoint option is given, else `AZURE_STORAGE_KEY`, else Azurite's
 *   published key for its `devstoreaccount1`, else `DefaultAzureCredential`
 *   from the optional `@azure/identity`.
 * - `gs://bucket/optional/prefix`: a `GcsStore` with Application Default
 *   Credentials; the `endpoint` option names another JSON API endpoint.
 */
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import { fileURLToPath } from "node:url";
import { ValidationError } from "../errors.js";
import { describeValue, isOptionObject, optionFields, readExactOptions, readOptions } from "../option-values.js";
import { LocalStore } from "./local-store.js";
import { MemoryStore } from "./memory-store.js";
import type { ObjectStore } from "./object-store.js";
import { S3Store } from "./s3-store.js";
import { AZURITE_ACCOUNT, AZURITE_ACCOUNT_KEY, AzureBlobStore, type AzureBlobStoreOptions } from "./azure-blob-store.js";
import { GcsStore } from "./gcs-store.js";
import { redactUrl } from "../redact.js";

const ACCEPTED =
  "use memory://, file:///absolute/dir or s3://bucket/prefix (options: ?endpoint=http://host:port&forcePathStyle=true&region=us-east-1); " +
  "azure://account/container/prefix (option: ?endpoint=http://host:port); gs://bucket/prefix (option: ?endpoint=http://host:port)";
const S3_OPTIONS = new Set(["endpoint", "forcePathStyle", "region"]);
/** Longer is no store URL: redacting a 10 MB string for the message overflowed the stack. */
const MAX_STORE_URL_CHARS = 8192;

/** Options of `openStore`. */
export interface OpenStoreOptions {
  /** Environment to read AWS and Azure settings from. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

function invalid(url: string, why: string): ValidationError {
  // Redacted: a URL carrying credentials (s3://KEY:SECRET@bucket) must not reach logs through this message.
  return new ValidationError(`invalid store URL ${JSON.stringify(redactUrl(url))}: ${why}; ${ACCEPTED}`);
}

/** The environment variables `openStore` reads. */
const ENV_KEYS = [
  "AWS_ENDPOINT_URL_S3",
  "AWS_ENDPOINT_URL",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AZURE_STORAGE_CONNECTION_STRING",
  "AZURE_STORAGE_ACCOUNT",
  "AZURE_STORAGE_KEY",
] as const;

/**
 * Opens the store a URL names; see the module documentation for the forms.
 * Throws `ValidationError` naming the accepted forms for anything else.
 *
 * @example
 * const store = openStore(process.env.TAQUBA_STORE ?? "memory://");
 */
export function openStore(url: string, opts: OpenStoreOptions = {}): ObjectStore {
  if (typeof url !== "string") throw new ValidationError(`a store URL must be a string, got ${describeValue(url)}; ${ACCEPTED}`);
  // Not shown: a URL may carry credentials, and this one is too long to redact.
  if (url.length > MAX_STORE_URL_CHARS)
    throw new ValidationError(`a store URL is at most ${MAX_STORE_URL_CHARS} characters, got one of ${url.length}; ${ACCEPTED}`);
  // Read once (see readOptions): a getter that throws is refused by name.
  const given = readExactOptions(opts, optionFields<OpenStoreOptions>({ env: true }), "OpenStoreOptions").env;
  if (given !== undefined && !isOptionObject(given))
    throw new ValidationError(`OpenStoreOptions.env must be an object of environment variables, got ${describeValue(given)}`);
  // Only the variables a store is configured from, each read once; an entry whose getter throws, or that is not text, is refused by name.
  const env = readOptions(given ?? process.env, ENV_KEYS, "OpenStoreOptions.env") as Readonly<Record<string, string | undefined>>;
  for (const [k, v] of Object.entries(env)) {
    if (typeof v !== "string") throw new ValidationError(`OpenStoreOptions.env.${k} must be a string, got ${describeValue(v)}`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(url, "not a URL");
  }
  switch (parsed.protocol) {
    case "memory:":
      if (parsed.host !== "" || (parsed.pathname !== "" && parsed.pathname !== "/") || parsed.search !== "") {
        throw invalid(url, "memory:// takes no host, path or options");
      }
      return new MemoryStore();
    case "file:": {
      // `file:relative` and `file://host/dir` parse, but are not absolute local paths.
      if (!/^file:\/\/\//i.test(url)) throw invalid(url, "a file URL needs an absolute path, file:///dir");
      if (parsed.search !== "" || parsed.hash !== "") throw invalid(url, "file URLs take no options");
      let dir: string;
      try {
        dir = fileURLToPath(parsed);
      } catch (err) {
        throw invalid(url, err instanceof Error ? err.message : String(err));
      }
      if (dir === "/") throw invalid(url, "refusing the file system root as a store directory");
      return new LocalStore(dir);
    }
    case "s3:": {
      const options = s3Options(url, parsed, env);
      try {
        return new S3Store(options);
      } catch (err) {
        throw err instanceof ValidationError ? invalid(url, err.message) : err;
      }
    }
    case "azure:":
      return construct(url, () => new AzureBlobStore(azureOptions(url, parsed, env)));
    case "gs:":
      return construct(url, () => new GcsStore(gcsOptions(url, parsed)));
    default:
      throw invalid(url, `unknown scheme "${parsed.protocol}"`);
  }
}

function s3Options(url: string, parsed: URL, env: Readonly<Record<string, string | undefined>>) {
  const bucket = parsed.hostname;
  if (bucket === "") throw invalid(url, "the bucket is missing (s3://bucket/prefix)");
  if (parsed.username !== "" || parsed.password !== "" || parsed.port !== "") {
    throw invalid(url, "credentials and ports do not belong in an s3 URL; use the AWS environment or the endpoint option");
  }
  for (const name of parsed.searchParams.keys()) {
    if (!S3_OPTIONS.has(name)) throw invalid(url, `unknown option "${name}"`);
  }
  const prefix = decodeURIComponent(parsed.pathname.replace(/^\/+/, ""));
  const endpoint = parsed.searchParams.get("endpoint") ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  if (endpoint !== undefined && endpoint !== "") {
    try {
      new URL(endpoint);
    } catch {
      throw invalid(url, `endpoint ${JSON.stringify(endpoint)} is not a URL`);
    }
  }
  const pathStyleOption = parsed.searchParams.get("forcePathStyle");
  if (pathStyleOption !== null && pathStyleOption !== "true" && pathStyleOption !== "false") {
    throw invalid(url, `forcePathStyle must be true or false, got ${describeValue(pathStyleOption)}`);
  }
  const region = parsed.searchParams.get("region") ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  const clientConfig: S3ClientConfig = {};
  if (endpoint) clientConfig.endpoint = endpoint;
  clientConfig.forcePathStyle = pathStyleOption !== null ? pathStyleOption === "true" : Boolean(endpoint);
  if (region) clientConfig.region = region;
  return { bucket, prefix, clientConfig };
}

/** Runs a store constructor, restating its `ValidationError` in terms of the URL. */
function construct(url: string, make: () => ObjectStore): ObjectStore {
  try {
    return make();
  } catch (err) {
    throw err instanceof ValidationError ? invalid(url, err.message) : err;
  }
}

/** The `endpoint` option of a cloud URL, checked; the only option these schemes take. */
function endpointOption(url: string, parsed: URL, scheme: string): string | undefined {
  if (parsed.username !== "" || parsed.password !== "" || parsed.port !== "") {
    throw invalid(url, `credentials and ports do not belong in ${scheme}:// URLs; use the environment or the endpoint option`);
  }
  if (parsed.hash !== "") throw invalid(url, `${scheme}:// URLs take no fragment`);
  for (const name of parsed.searchParams.keys()) {
    if (name !== "endpoint") throw invalid(url, `unknown option "${name}"`);
  }
  const endpoint = parsed.searchParams.get("endpoint") ?? undefined;
  if (endpoint !== undefined) {
    let ok = false;
    try {
      ok = ["http:", "https:"].includes(new URL(endpoint).protocol);
    } catch {
      ok = false;
    }
    if (!ok) throw invalid(url, `endpoint ${JSON.stringify(endpoint)} is not a URL`);
  }
  return endpoint;
}

function pathSegments(url: string, parsed: URL): string[] {
  try {
    return parsed.pathname
      .replace(/^\/+/, "")
      .split("/")
      .map((segment) => decodeURIComponent(segment));
  } catch {
    throw invalid(url, "the path has a malformed percent-encoding");
  }
}

function connectionStringAccount(connectionString: string): string | undefined {
  return /(?:^|;)\s*AccountName=([^;]+)/i.exec(connectionString)?.[1]?.trim();
}

function azureOptions(url: string, parsed: URL, env: Readonly<Record<string, string | undefined>>): AzureBlobStoreOptions {
  const endpoint = endpointOption(url, parsed, "azure");
  const account = parsed.hostname;
  if (account === "") throw invalid(url, "the account is missing (azure://account/container/prefix)");
  const [container = "", ...rest] = pathSegments(url, parsed);
  if (container === "") throw invalid(url, "the container is missing (azure://account/container/prefix)");
  const base = { container, prefix: rest.join("/"), ...(endpoint !== undefined ? { endpoint } : {}) };
  const connectionString = env.AZURE_STORAGE_CONNECTION_STRING;
  if (connectionString && endpoint === undefined && connectionStringAccount(connectionString) === account) {
    return { ...base, connectionString };
  }
  const keyAccount = env.AZURE_STORAGE_ACCOUNT;
  if (env.AZURE_STORAGE_KEY && (keyAccount === undefined || keyAccount === "" || keyAccount === account)) {
    return { ...base, account, accountKey: env.AZURE_STORAGE_KEY };
  }
  if (account === AZURITE_ACCOUNT) return { ...base, account, accountKey: AZURITE_ACCOUNT_KEY };
  return { ...base, account };
}

function gcsOptions(url: string, parsed: URL) {
  const apiEndpoint = endpointOption(url, parsed, "gs");
  const bucket = parsed.hostname;
  if (bucket === "") throw invalid(url, "the bucket is missing (gs://bucket/prefix)");
  const prefix = pathSegments(url, parsed).join("/");
  return { bucket, prefix, ...(apiEndpoint !== undefined ? { apiEndpoint } : {}) };
}
