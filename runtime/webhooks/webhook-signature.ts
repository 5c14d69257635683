/**
 * @module Standard Webhooks signing and verification.
 *
 * A signed delivery carries three headers:
 * - `webhook-id`: the delivery's id, the same on every retry of it, so a
 *   receiver can drop duplicates;
 * - `webhook-timestamp`: seconds since the epoch when this attempt was sent;
 * - `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
 *   several space-separated when more than one secret is active (rotation).
 *
 * Signing the id and timestamp with the body stops an attacker from replaying
 * a captured body under a new id or at a later time; the receiver rejects
 * timestamps outside a tolerance window.
 */

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { ValidationError } from "../errors.js";
import { WebhookVerificationError } from "./webhook-errors.js";
import { describeValue, errorText, isOptionArray, isOptionBytes, optionFields, quoteValue, readExactOptions, readOptionArray } from "../option-values.js";

/**
 * A signing secret: `whsec_<base64>` (the Standard Webhooks form), bare
 * base64, or the raw key bytes.
 */
export type WebhookSecret = string | Uint8Array;

// Header names are lower case, as Node presents received headers.
/** Header carrying the delivery id. */
export const WEBHOOK_ID_HEADER = "webhook-id";
/** Header carrying the attempt's signing time, in seconds since the epoch. */
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
/** Header carrying the `v1,<base64>` signatures. */
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";

const SECRET_PREFIX = "whsec_";
// 128 bits: shorter keys make brute-forcing the HMAC key feasible.
const MIN_SECRET_BYTES = 16;
/** Longest base64 text of a secret (3 KiB of key): longer is a mistake, and the pattern below overflows the stack on megabytes. */
const MAX_SECRET_CHARS = 4096;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** Default tolerance between the signed timestamp and the receiver's clock: five minutes. */
export const DEFAULT_WEBHOOK_TOLERANCE_MS = 5 * 60_000;

/**
 * The HMAC key a secret stands for. Throws `ValidationError` when a string
 * is not base64 (after an optional `whsec_`) or the key is shorter than 16
 * bytes.
 *
 * @example
 * const key = parseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"); // 24 bytes
 */
export function parseWebhookSecret(secret: WebhookSecret): Uint8Array {
  let key: Uint8Array;
  if (typeof secret === "string") {
    const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
    // The pattern backtracks per group: a string of megabytes overflows the stack before it answers.
    if (b64.length > MAX_SECRET_CHARS)
      throw new ValidationError(`a webhook secret string is at most ${MAX_SECRET_CHARS} characters of base64, got ${b64.length}`);
    if (!BASE64.test(b64)) {
      throw new ValidationError("a webhook secret string must be base64, optionally prefixed with whsec_; pass raw key bytes as a Uint8Array");
    }
    key = Buffer.from(b64, "base64");
  } else if (isOptionBytes(secret)) {
    key = secret;
  } else {
    // A number or object would pass the length check (undefined < 32 is false) and fail at the first delivery.
    throw new ValidationError(`a webhook secret must be a base64 string (optionally whsec_-prefixed) or a Uint8Array, got ${describeValue(secret)}`);
  }
  if (key.length < MIN_SECRET_BYTES) {
    throw new ValidationError(`a webhook secret must hold at least ${MIN_SECRET_BYTES} bytes of key, got ${key.length}; make one with generateWebhookSecret()`);
  }
  return key;
}

/**
 * A fresh random secret in the `whsec_` form (32 bytes of key). Share it
 * with the receiver once; keep it out of job headers and logs.
 *
 * @example
 * const secret = generateWebhookSecret(); // "whsec_..."
 */
export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** Most secrets one signature or verification takes (several only while rotating). */
const MAX_SECRETS = 16;

/**
 * One secret or several, as a list, each entry read once (an array whose
 * getter throws, or a revoked Proxy, is a `ValidationError` naming `path`).
 * The entries are checked by `parseWebhookSecret`.
 */
export function secretList(secrets: WebhookSecret | readonly WebhookSecret[], path = "the webhook secrets"): WebhookSecret[] {
  return (isOptionArray(secrets) ? readOptionArray(path, secrets, "a secret or an array of secrets", MAX_SECRETS) : [secrets]) as WebhookSecret[];
}

function toBytes(body: Uint8Array | string): Uint8Array {
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (isOptionBytes(body)) return body;
  throw new ValidationError(`a webhook body must be the raw bytes (a Uint8Array) or a string, got ${describeValue(body)}`);
}

function hmac(key: Uint8Array, id: string, timestampSec: number, body: Uint8Array): Buffer {
  return createHmac("sha256", key).update(`${id}.${timestampSec}.`, "utf8").update(body).digest();
}

/**
 * The `webhook-signature` header value for one delivery: one `v1,<base64>`
 * entry per secret, space separated. Pass several secrets while rotating so
 * receivers holding either one accept the delivery.
 *
 * @example
 * const sig = signWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_1", 1614265330, '{"a":1}');
 */
export function signWebhook(secrets: WebhookSecret | readonly WebhookSecret[], id: string, timestampSec: number, body: Uint8Array | string): string {
  const list = secretList(secrets);
  if (list.length === 0) throw new ValidationError("signWebhook needs at least one secret");
  if (typeof id !== "string") throw new ValidationError(`a webhook id must be a string, got ${describeValue(id)}`);
  if (!Number.isSafeInteger(timestampSec) || timestampSec < 0) {
    throw new ValidationError(`a webhook timestamp is whole seconds since the epoch, got ${describeValue(timestampSec)}`);
  }
  const bytes = toBytes(body);
  return list.map((s) => `v1,${hmac(parseWebhookSecret(s), id, timestampSec, bytes).toString("base64")}`).join(" ");
}

/** Received headers: a fetch `Headers`, or Node's `IncomingHttpHeaders`-style record (any case). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const rec = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  let v: unknown = rec[name];
  if (v === undefined) {
    const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
    v = key === undefined ? undefined : rec[key];
  }
  // Only text counts: a number or object where a header belongs is as good as a missing header.
  if (isOptionArray(v)) return v.every((e) => typeof e === "string") ? v.join(" ") : undefined;
  return typeof v === "string" ? v : undefined;
}

/** `header`, with headers that cannot be read (a revoked Proxy, a getter that throws) refused as a bad argument. */
function readHeader(headers: WebhookHeaders, name: string): string | undefined {
  if (headers === null || (typeof headers !== "object" && typeof headers !== "function"))
    throw new ValidationError(`verifyWebhook: headers must be the request's headers (an object or a Headers), got ${describeValue(headers)}`);
  try {
    return header(headers, name);
  } catch (err) {
    throw new ValidationError(`verifyWebhook: reading the ${name} header threw: ${errorText(err)}`);
  }
}

/** Options for {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /**
   * How far the signed timestamp may be from `now`, either way. Default:
   * five minutes. Bounds how long a captured delivery can be replayed.
   */
  toleranceMs?: number;
  /** The receiver's time in epoch milliseconds. Default: `Date.now()`. */
  now?: number;
}

/** What a verified webhook claims, now that it is known to be authentic. */
export interface VerifiedWebhook {
  /** The delivery id; the same on every retry, so use it to drop duplicates. */
  id: string;
  /** When the sender signed this attempt, epoch milliseconds. */
  timestampMs: number;
}

const VERIFY_KEYS = optionFields<VerifyWebhookOptions>({ toleranceMs: true, now: true });

/**
 * Checks a received webhook's signature and timestamp. Pass the raw body
 * bytes exactly as received (not re-serialized JSON). Accepts the request
 * when any `v1` signature in the header matches one of `secrets`; the
 * comparison takes the same time wherever the bytes differ.
 *
 * Throws `WebhookVerificationError` with a `reason` when a header is
 * missing, the timestamp is malformed or outside the tolerance, or no
 * signature matches.
 *
 * @example
 * import { createServer } from "node:http";
 * createServer((req, res) => {
 *   const chunks: Buffer[] = [];
 *   req.on("data", (c: Buffer) => chunks.push(c)).on("end", () => {
 *     try {
 *       const { id } = verifyWebhook(process.env.WEBHOOK_SECRET!, req.headers, Buffer.concat(chunks));
 *       res.writeHead(204).end(); // process the delivery once per id
 *     } catch {
 *       res.writeHead(401).end();
 *     }
 *   });
 * });
 */
export function verifyWebhook(
  secrets: WebhookSecret | readonly WebhookSecret[],
  headers: WebhookHeaders,
  body: Uint8Array | string,
  opts: VerifyWebhookOptions = {},
): VerifiedWebhook {
  const keys = secretList(secrets).map(parseWebhookSecret);
  const o = readExactOptions(opts, VERIFY_KEYS, "VerifyWebhookOptions");
  const bytes = toBytes(body);
  const id = readHeader(headers, WEBHOOK_ID_HEADER);
  const ts = readHeader(headers, WEBHOOK_TIMESTAMP_HEADER);
  const sig = readHeader(headers, WEBHOOK_SIGNATURE_HEADER);
  for (const [name, v] of [
    [WEBHOOK_ID_HEADER, id],
    [WEBHOOK_TIMESTAMP_HEADER, ts],
    [WEBHOOK_SIGNATURE_HEADER, sig],
  ] as const) {
    if (v === undefined || v === "") throw new WebhookVerificationError("missing-header", `the ${name} header is missing`);
  }
  if (!/^\d{1,15}$/.test(ts!)) throw new WebhookVerificationError("invalid-timestamp", `webhook-timestamp ${quoteValue(ts)} is not whole seconds`);
  const timestampSec = Number(ts);
  const now = o.now ?? Date.now();
  const tolerance = o.toleranceMs ?? DEFAULT_WEBHOOK_TOLERANCE_MS;
  // NaN compares false with everything, so an unchecked NaN (say Number of an unset variable) would accept any timestamp.
  if (typeof tolerance !== "number" || !Number.isFinite(tolerance) || tolerance < 0) {
    throw new ValidationError(`verifyWebhook: toleranceMs must be a finite number of milliseconds, 0 or more, got ${describeValue(o.toleranceMs)}`);
  }
  if (typeof now !== "number" || !Number.isFinite(now))
    throw new ValidationError(`verifyWebhook: now must be finite epoch milliseconds, got ${describeValue(o.now)}`);
  const skew = now - timestampSec * 1000;
  if (skew > tolerance) throw new WebhookVerificationError("timestamp-too-old", `signed ${Math.round(skew / 1000)} s ago, beyond the tolerance`);
  if (-skew > tolerance) throw new WebhookVerificationError("timestamp-too-new", `signed ${Math.round(-skew / 1000)} s in the future, beyond the tolerance`);

  const expected = keys.map((k) => hmac(k, id!, timestampSec, bytes));
  let matched = false;
  for (const entry of sig!.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue; // other schemes (e.g. v1a) are not ours to check
    const given = Buffer.from(entry.slice(comma + 1), "base64");
    for (const e of expected) {
      // Every candidate is compared, matched or not, so timing reveals nothing about which one matched.
      if (given.length === e.length && timingSafeEqual(given, e)) matched = true;
    }
  }
  if (!matched)
    throw new WebhookVerificationError(
      "no-matching-signature",
      "no v1 signature matches the secret; check the secret and that the body is the raw bytes received",
    );
  return { id: id!, timestampMs: timestampSec * 1000 };
}
