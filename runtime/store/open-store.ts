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
 */
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import { fileURLToPath } from "node:url";
import { ValidationError } from "../errors.js";
import { LocalStore } from "./local-store.js";
import { MemoryStore } from "./memory-store.js";
import type { ObjectStore } from "./object-store.js";
import { S3Store } from "./s3-store.js";
import { redactUrl } from "../redact.js";

const ACCEPTED =
  "use memory://, file:///absolute/dir or s3://bucket/prefix (options: ?endpoint=http://host:port&forcePathStyle=true&region=us-east-1)";
const S3_OPTIONS = new Set(["endpoint", "forcePathStyle", "region"]);

/** Options of `openStore`. */
export interface OpenStoreOptions {
  /** Environment to read AWS settings from. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

function invalid(url: string, why: string): ValidationError {
  // Redacted: a URL carrying credentials (s3://KEY:SECRET@bucket) must not reach logs through this message.
  return new ValidationError(`invalid store URL ${JSON.stringify(redactUrl(url))}: ${why}; ${ACCEPTED}`);
}

/**
 * Opens the store a URL names; see the module documentation for the forms.
 * Throws `ValidationError` naming the accepted forms for anything else.
 *
 * @example
 * const store = openStore(process.env.TAQUBA_STORE ?? "memory://");
 */
export function openStore(url: string, opts: OpenStoreOptions = {}): ObjectStore {
  if (typeof url !== "string") throw invalid(String(url), "not a string");
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
      const options = s3Options(url, parsed, opts.env ?? process.env);
      try {
        return new S3Store(options);
      } catch (err) {
        throw err instanceof ValidationError ? invalid(url, err.message) : err;
      }
    }
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
    throw invalid(url, `forcePathStyle must be true or false, got ${JSON.stringify(pathStyleOption)}`);
  }
  const region = parsed.searchParams.get("region") ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  const clientConfig: S3ClientConfig = {};
  if (endpoint) clientConfig.endpoint = endpoint;
  clientConfig.forcePathStyle = pathStyleOption !== null ? pathStyleOption === "true" : Boolean(endpoint);
  if (region) clientConfig.region = region;
  return { bucket, prefix, clientConfig };
}
