/**
 * @module The webhook request model and its encoding as a queue job.
 *
 * A delivery travels as an ordinary job so it inherits the queue's
 * durability, retries and dead-lettering. The request's configuration goes
 * in job headers and the body is the job payload:
 *
 * | job header           | meaning                                   |
 * |----------------------|-------------------------------------------|
 * | `webhook.url`        | target URL, http or https (required)      |
 * | `webhook.method`     | HTTP method (default POST)                |
 * | `webhook.timeout_ms` | whole-exchange timeout (default: worker's)|
 * | `http.<Name>`        | one outgoing HTTP header each             |
 *
 * Requests are validated when built and again when decoded, so a job
 * written by another version or by hand fails with a message naming the
 * field rather than a confusing HTTP error.
 */

import { validateHeaderName, validateHeaderValue } from "node:http";
import { InvalidWebhookRequestError } from "./webhook-errors.js";
import { redactUrl } from "../redact.js";
import {
  describeValue,
  errorText,
  hasMethods,
  isInstance,
  isOptionBytes,
  isOptionObject,
  optionFields,
  quoteValue,
  readExactOptions,
  readOptions,
} from "../option-values.js";
import { ValidationError } from "../errors.js";
import { validateQueueName } from "../queue/names.js";

/** Job header holding the target URL. */
export const WEBHOOK_URL_KEY = "webhook.url";
/** Job header holding the HTTP method. */
export const WEBHOOK_METHOD_KEY = "webhook.method";
/** Job header holding the timeout in milliseconds. */
export const WEBHOOK_TIMEOUT_KEY = "webhook.timeout_ms";
/** Prefix of job headers that become outgoing HTTP headers. */
export const WEBHOOK_HTTP_HEADER_PREFIX = "http.";
const CONFIG_PREFIX = "webhook.";

/** Default request timeout, used when neither the request nor the worker sets one: 30 s. */
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 30_000;
/**
 * Longest allowed request timeout: 10 minutes. The worker holds the job's
 * lease for the whole exchange; a receiver that needs longer should accept
 * the delivery and work on it afterwards.
 */
export const MAX_WEBHOOK_TIMEOUT_MS = 10 * 60_000;

// Set by the worker or by Node for each attempt; a request may not override them.
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "proxy-connection",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
]);

const METHOD_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * An outbound HTTP request to deliver. Build one and hand it to
 * {@link enqueueWebhook} or {@link webhookEnqueueRequest}.
 *
 * @example
 * const req: WebhookRequest = {
 *   url: "https://example.com/hooks/orders",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ order: "o-1", status: "paid" }),
 * };
 */
export interface WebhookRequest {
  /** Target, `http:` or `https:`. Redirects are not followed. */
  url: string | URL;
  /** HTTP method. Default: `POST`. */
  method?: string;
  /** Outgoing headers. Hop-by-hop headers, `host` and the `webhook-*` signing headers are set by the worker and refused here. */
  headers?: Readonly<Record<string, string>>;
  /** Timeout for the whole exchange, 1 ms to 10 min. Default: the worker's default (30 s unless configured). */
  timeoutMs?: number;
  /** The body; a string is sent as UTF-8. Default: empty. */
  body?: Uint8Array | string;
}

/** A delivery job decoded back into a request, validated. */
export interface DecodedWebhookRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  /** Absent when the job leaves the timeout to the worker. */
  timeoutMs?: number;
  body: Uint8Array;
}

/** Queue options for the delivery job, beside the webhook itself. */
export interface WebhookEnqueueOptions {
  priority?: number;
  /** Epoch milliseconds before which the delivery is not attempted. */
  runAt?: number;
  /** Collapses duplicate deliveries, as the queue's `dedupKey`. */
  dedupKey?: string;
  /** Delivery attempts before the job is dead-lettered. Default: the queue's. */
  maxAttempts?: number;
  /** Extra job headers (not sent over HTTP); may not use the `webhook.` or `http.` prefixes. */
  headers?: Readonly<Record<string, string>>;
}

/**
 * Everything `SettlementEffects.enqueue` and `Queue.enqueue` take, so a
 * delivery can be staged in the same commit as another change.
 */
export interface WebhookEnqueueRequest {
  queueName: string;
  payload: Uint8Array;
  options: {
    priority?: number;
    runAt?: number;
    dedupKey?: string;
    maxAttempts?: number;
    headers: Record<string, string>;
  };
}

function checkUrl(raw: string, issues: string[]): URL | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    issues.push(`url "${redactUrl(raw)}" is not an absolute URL`);
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    issues.push(`url "${redactUrl(url)}" uses ${url.protocol}; only http: and https: are delivered`);
    return undefined;
  }
  if (url.hostname === "") {
    issues.push(`url "${redactUrl(url)}" has no host`);
    return undefined;
  }
  return url;
}

function checkMethod(method: unknown, issues: string[]): void {
  if (typeof method !== "string") issues.push(`method must be a string, got ${describeValue(method)}`);
  else if (!METHOD_TOKEN.test(method)) issues.push(`method ${quoteValue(method)} is not an HTTP method token`);
  else if (method.toUpperCase() === "CONNECT") issues.push("method CONNECT opens a tunnel, not a webhook; use POST, PUT or another method");
}

function checkTimeout(timeoutMs: unknown, issues: string[]): void {
  if (typeof timeoutMs !== "number" || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_WEBHOOK_TIMEOUT_MS) {
    issues.push(`timeout ${describeValue(timeoutMs)} ms is not a whole number of milliseconds from 1 to ${MAX_WEBHOOK_TIMEOUT_MS}`);
  }
}

function checkHeaders(headers: Readonly<Record<string, string>>, issues: string[]): void {
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") {
      issues.push(`header ${quoteValue(name)} must be a string, got ${describeValue(value)}`);
      continue;
    }
    try {
      validateHeaderName(name);
    } catch {
      issues.push(`header name ${quoteValue(name)} is not a valid HTTP header name`);
      continue;
    }
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) issues.push(`header ${quoteValue(name)} is set by the delivery worker and may not be given`);
    if (seen.has(lower)) issues.push(`header ${quoteValue(name)} is given twice (header names ignore case)`);
    seen.add(lower);
    try {
      validateHeaderValue(name, value);
    } catch {
      issues.push(`header ${quoteValue(name)} has a value with characters HTTP forbids (control characters or line breaks)`);
    }
  }
}

/**
 * The job headers that carry `request`. Throws `InvalidWebhookRequestError`
 * listing every problem.
 */
export function encodeWebhookHeaders(request: WebhookRequest): Record<string, string> {
  return headersOf(readRequest(request));
}

/** The job headers of a request whose fields were read (see `readRequest`). */
function headersOf(r: Partial<Record<(typeof REQUEST_KEYS)[number], unknown>>): Record<string, string> {
  const issues: string[] = [];
  const rawUrl = isInstance(r.url, URL) ? r.url.href : r.url;
  const url = typeof rawUrl === "string" ? checkUrl(rawUrl, issues) : (issues.push(`url must be a string or URL, got ${describeValue(rawUrl)}`), undefined);
  const method = r.method ?? "POST";
  checkMethod(method, issues);
  if (r.timeoutMs !== undefined) checkTimeout(r.timeoutMs, issues);
  const headers = readHeaders("request.headers", r.headers, issues);
  checkHeaders(headers, issues);
  if (issues.length > 0 || !url) throw new InvalidWebhookRequestError(issues);

  // Checked above: the method is a token string and the timeout a whole number.
  const out: Record<string, string> = { [WEBHOOK_URL_KEY]: url.href, [WEBHOOK_METHOD_KEY]: method as string };
  if (r.timeoutMs !== undefined) out[WEBHOOK_TIMEOUT_KEY] = String(r.timeoutMs);
  for (const [name, value] of Object.entries(headers)) out[WEBHOOK_HTTP_HEADER_PREFIX + name] = value;
  return out;
}

const REQUEST_KEYS = optionFields<WebhookRequest>({ url: true, method: true, headers: true, timeoutMs: true, body: true });

/** `request`'s fields, each read once; one that cannot be read (or a request that is no object) is an `InvalidWebhookRequestError`. */
function readRequest(request: unknown): Partial<Record<(typeof REQUEST_KEYS)[number], unknown>> {
  try {
    return readOptions(request, REQUEST_KEYS, "request", "a webhook request");
  } catch (err) {
    throw new InvalidWebhookRequestError(err instanceof ValidationError && err.issues.length > 0 ? err.issues : [errorText(err)]);
  }
}

/**
 * A copy of the headers object `v` at `path` (empty when absent): one that is
 * no object (a 10 MB string would be walked as ten million headers) or that
 * throws when read is an issue.
 */
function readHeaders(path: string, v: unknown, issues: string[]): Record<string, string> {
  if (v === undefined) return {};
  if (!isOptionObject(v)) {
    issues.push(`${path} must be an object of strings, got ${describeValue(v)}`);
    return {};
  }
  try {
    return { ...(v as Record<string, string>) };
  } catch (err) {
    issues.push(`reading ${path} threw: ${errorText(err)}`);
    return {};
  }
}

/**
 * Reads a delivery job back into a request. Job headers outside the
 * `webhook.` and `http.` prefixes are ignored (they belong to the caller);
 * unknown `webhook.` keys are refused, as they are most likely typos.
 * Throws `InvalidWebhookRequestError` listing every problem.
 */
export function decodeWebhookJob(jobHeaders: Readonly<Record<string, string>>, payload: Uint8Array): DecodedWebhookRequest {
  // A string here would be walked character by character (10 MB of them is ten million entries).
  if (!isOptionObject(jobHeaders)) throw new InvalidWebhookRequestError([`the job headers must be an object of strings, got ${describeValue(jobHeaders)}`]);
  if (!isOptionBytes(payload)) throw new InvalidWebhookRequestError([`the job payload must be a Uint8Array, got ${describeValue(payload)}`]);
  const issues: string[] = [];
  const headers: Record<string, string> = {};
  let url: URL | undefined;
  let method = "POST";
  let timeoutMs: number | undefined;
  for (const [key, value] of Object.entries(jobHeaders)) {
    if (typeof value !== "string") {
      issues.push(`job header ${quoteValue(key)} must be a string, got ${describeValue(value)}`);
    } else if (key.startsWith(WEBHOOK_HTTP_HEADER_PREFIX)) {
      headers[key.slice(WEBHOOK_HTTP_HEADER_PREFIX.length)] = value;
    } else if (key === WEBHOOK_URL_KEY) {
      url = checkUrl(value, issues);
    } else if (key === WEBHOOK_METHOD_KEY) {
      method = value;
      checkMethod(value, issues);
    } else if (key === WEBHOOK_TIMEOUT_KEY) {
      if (!/^\d{1,10}$/.test(value)) issues.push(`${WEBHOOK_TIMEOUT_KEY} "${value}" is not a whole number of milliseconds`);
      else {
        timeoutMs = Number(value);
        checkTimeout(timeoutMs, issues);
      }
    } else if (key.startsWith(CONFIG_PREFIX)) {
      issues.push(`job header "${key}" is not a webhook setting (known: ${WEBHOOK_URL_KEY}, ${WEBHOOK_METHOD_KEY}, ${WEBHOOK_TIMEOUT_KEY})`);
    }
  }
  if (!(WEBHOOK_URL_KEY in jobHeaders)) issues.push(`job header ${WEBHOOK_URL_KEY} is missing; enqueue deliveries with enqueueWebhook`);
  checkHeaders(headers, issues);
  if (issues.length > 0 || !url) throw new InvalidWebhookRequestError(issues);
  return timeoutMs === undefined ? { url, method, headers, body: payload } : { url, method, headers, timeoutMs, body: payload };
}

/**
 * Builds the job for `request` without enqueueing it, so it can be staged
 * into `SettlementEffects` and created in the same commit as the change it
 * reports.
 *
 * @example
 * const d = webhookEnqueueRequest("webhooks", { url: "https://example.com/hook", body: "{}" });
 * effects.enqueue(d.queueName, d.payload, d.options);
 */
export function webhookEnqueueRequest(queueName: string, request: WebhookRequest, opts: WebhookEnqueueOptions = {}): WebhookEnqueueRequest {
  validateQueueName(queueName);
  // The request is read once: what was checked is what is enqueued.
  const r = readRequest(request);
  const headers = headersOf(r);
  const body = r.body ?? new Uint8Array();
  if (typeof body !== "string" && !isOptionBytes(body))
    throw new InvalidWebhookRequestError([`body must be a string or a Uint8Array, got ${describeValue(body)}`]);
  let o: Partial<WebhookEnqueueOptions>;
  try {
    o = readExactOptions(opts, ENQUEUE_OPTION_KEYS, "WebhookEnqueueOptions") as Partial<WebhookEnqueueOptions>;
  } catch (err) {
    throw new InvalidWebhookRequestError(err instanceof ValidationError && err.issues.length > 0 ? err.issues : [errorText(err)]);
  }
  const issues: string[] = [];
  const extra = readHeaders("WebhookEnqueueOptions.headers", o.headers, issues);
  for (const k of Object.keys(extra)) {
    if (k.startsWith(CONFIG_PREFIX) || k.startsWith(WEBHOOK_HTTP_HEADER_PREFIX))
      issues.push(`extra job header ${quoteValue(k)} uses a prefix reserved for the webhook itself; set it on the request instead`);
  }
  if (issues.length > 0) throw new InvalidWebhookRequestError(issues);
  const payload = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const options: WebhookEnqueueRequest["options"] = { headers: { ...extra, ...headers } };
  if (o.priority !== undefined) options.priority = o.priority;
  if (o.runAt !== undefined) options.runAt = o.runAt;
  if (o.dedupKey !== undefined) options.dedupKey = o.dedupKey;
  if (o.maxAttempts !== undefined) options.maxAttempts = o.maxAttempts;
  return { queueName, payload, options };
}

const ENQUEUE_OPTION_KEYS = optionFields<WebhookEnqueueOptions>({ priority: true, runAt: true, dedupKey: true, maxAttempts: true, headers: true });

/** The part of a queue `enqueueWebhook` needs. */
export interface WebhookEnqueuer {
  enqueue(queueName: string, payload: Uint8Array, opts: WebhookEnqueueRequest["options"]): Promise<{ jobId: string; newlyEnqueued: boolean }>;
}

/**
 * Enqueues a delivery of `request` on `queueName`, where a webhook worker
 * picks it up. Resolves with the job id, which is also the delivery's
 * `webhook-id`.
 *
 * @example
 * const { jobId } = await enqueueWebhook(queue, "webhooks", { url: "https://example.com/hook", body: "{}" });
 */
export async function enqueueWebhook(
  queue: WebhookEnqueuer,
  queueName: string,
  request: WebhookRequest,
  opts: WebhookEnqueueOptions = {},
): Promise<{ jobId: string; newlyEnqueued: boolean }> {
  if (!hasMethods(queue, ["enqueue"])) throw new ValidationError(`enqueueWebhook takes a queue (with enqueue()), got ${describeValue(queue)}`);
  const r = webhookEnqueueRequest(queueName, request, opts);
  return queue.enqueue(r.queueName, r.payload, r.options);
}
