/**
 * @module `WebhookWorker`: delivers webhook jobs over HTTP.
 *
 * One `process` call is one delivery attempt: decode the job, hold the
 * lease for the whole attempt, resolve and check the target's addresses,
 * sign, send to the checked address, and turn the answer into the queue's
 * settlement: resolve (ack), `PermanentError` (dead-letter) or a retryable
 * `WebhookDeliveryError` (nack with the queue's backoff).
 *
 * Retry-After: a retryable error carries `retryAfterMs`, the server's
 * requested delay (capped). A queue whose worker loop passes that delay to
 * `nack` honours it; otherwise the queue's own backoff applies.
 */

import { type Clock, SystemClock } from "../clock.js";
import { PermanentError, CancelRequestedError } from "../queue/errors.js";
import { ValidationError } from "../errors.js";
import { describeValue, hasMethods, isOptionArray, isOptionBytes, optionFields, ownHeader, readExactOptions, readOptionArray } from "../option-values.js";
import type { ClaimedJob } from "../queue/types.js";
import type { Queue } from "../queue/queue.js";
import { runWorker, type RunWorkerOptions, type Worker } from "../queue/worker.js";
import {
  type AddressPolicyOptions,
  type CompiledAddressPolicy,
  compileAddressPolicy,
  resolveAllowedAddresses,
  type ResolvedAddress,
} from "./address-policy.js";
import { classifyResponse, DEFAULT_MAX_RETRY_AFTER_MS } from "./delivery-verdict.js";
import { sendHttp } from "./http-exchange.js";
import { InvalidWebhookRequestError, WebhookAddressRefusedError, WebhookDeliveryError, WebhookRejectedError } from "./webhook-errors.js";
import { DEFAULT_WEBHOOK_TIMEOUT_MS, decodeWebhookJob, MAX_WEBHOOK_TIMEOUT_MS, type DecodedWebhookRequest } from "./webhook-request.js";
import {
  parseWebhookSecret,
  secretList,
  signWebhook,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  type WebhookSecret,
} from "./webhook-signature.js";
import { redactUrl, safeExcerpt } from "../redact.js";
import { annotateActiveSpan, RUN_TRACEPARENT, type SpanAttributes, traced, tracing } from "../telemetry/tracing.js";

/** Options of {@link WebhookWorker}. Address policy fields default to public addresses only. */
export interface WebhookWorkerOptions extends AddressPolicyOptions {
  /**
   * Signing secret(s). With one, every delivery carries a Standard Webhooks
   * `webhook-signature`; with several (during a rotation), one signature per
   * secret. Kept in the worker, never in the job. Default: unsigned (the
   * `webhook-id` and `webhook-timestamp` headers are still sent).
   */
  secret?: WebhookSecret | readonly WebhookSecret[];
  /** Timeout of requests that do not set their own. Default: 30 000 ms. */
  defaultTimeoutMs?: number;
  /** Ceiling on a server's `Retry-After`. Default: 1 hour. */
  maxRetryAfterMs?: number;
  /** Source of `webhook-timestamp` and of "now" for `Retry-After` dates. Default: `SystemClock`. */
  clock?: Clock;
  /** `User-Agent` sent when the request sets none. Default: `taquba-webhooks`. */
  userAgent?: string;
  /**
   * Certificate authorities (PEM) trusted for https receivers, for a private
   * CA. Replaces Node's bundled public roots when set. Certificates are
   * always verified against the URL's host name. Default: Node's roots.
   */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>;
}

/** Each field of `WebhookWorkerOptions`, for its list and for `runWebhookWorker`'s, which takes them too. */
const WEBHOOK_WORKER_FIELDS: { readonly [K in keyof WebhookWorkerOptions]-?: true } = {
  secret: true,
  defaultTimeoutMs: true,
  maxRetryAfterMs: true,
  clock: true,
  userAgent: true,
  ca: true,
  allowLoopback: true,
  allowPrivate: true,
  allowedNetworks: true,
  resolve: true,
};
const WEBHOOK_WORKER_KEYS = optionFields<WebhookWorkerOptions>(WEBHOOK_WORKER_FIELDS);

/** `WebhookWorkerOptions.secret` as a list, each entry read once and parsed now: a bad one fails at startup, not per delivery. */
function readSecrets(secret: unknown): WebhookSecret[] {
  if (secret === undefined) return [];
  const path = "WebhookWorkerOptions.secret";
  return secretList(secret as WebhookSecret, path).map((s, i) => {
    try {
      parseWebhookSecret(s as WebhookSecret);
    } catch (err) {
      if (err instanceof ValidationError) throw new ValidationError(`${isOptionArray(secret) ? `${path}[${i}]` : path}: ${err.message}`);
      throw err;
    }
    return s as WebhookSecret;
  });
}

/** `WebhookWorkerOptions.ca` copied and checked now: a value TLS cannot take would otherwise fail every https delivery. */
function readCa(ca: unknown): WebhookWorkerOptions["ca"] {
  const path = "WebhookWorkerOptions.ca";
  const pem = (v: unknown, at: string): string | Buffer => {
    if (typeof v === "string") return v;
    if (isOptionBytes(v)) return Buffer.from(v);
    throw new ValidationError(`${at} must be a PEM certificate (a string or Buffer), got ${describeValue(v)}`);
  };
  if (ca === undefined) return undefined;
  if (!isOptionArray(ca)) return pem(ca, path);
  return readOptionArray(path, ca, "certificates (strings or Buffers)", 10_000).map((v, i) => pem(v, `${path}[${i}]`));
}

/**
 * A queue `Worker` that sends webhook jobs. Run it with the queue's
 * `runWorker`, or through {@link runWebhookWorker}.
 *
 * @example
 * const worker = new WebhookWorker({ secret: process.env.WEBHOOK_SECRET });
 * await runWorker(queue, "webhooks", worker, { concurrency: 8, signal });
 */
export class WebhookWorker implements Worker {
  readonly #policy: CompiledAddressPolicy;
  readonly #secrets: readonly WebhookSecret[];
  readonly #defaultTimeoutMs: number;
  readonly #maxRetryAfterMs: number;
  readonly #clock: Clock;
  readonly #userAgent: string;
  readonly #ca: WebhookWorkerOptions["ca"];

  /** Throws a `ValidationError` naming a bad option (secret, network, timeout). */
  constructor(given: WebhookWorkerOptions = {}) {
    // Each field read once (see readOptions): what is checked is what the worker runs with.
    const opts = readExactOptions(given, WEBHOOK_WORKER_KEYS, "WebhookWorkerOptions") as WebhookWorkerOptions;
    this.#policy = compileAddressPolicy(opts, "WebhookWorkerOptions");
    this.#secrets = readSecrets(opts.secret);
    this.#defaultTimeoutMs = opts.defaultTimeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
    if (!Number.isInteger(this.#defaultTimeoutMs) || this.#defaultTimeoutMs < 1 || this.#defaultTimeoutMs > MAX_WEBHOOK_TIMEOUT_MS) {
      throw new ValidationError(
        `WebhookWorkerOptions.defaultTimeoutMs must be a whole number of milliseconds from 1 to ${MAX_WEBHOOK_TIMEOUT_MS}, got ${describeValue(this.#defaultTimeoutMs)}`,
      );
    }
    this.#maxRetryAfterMs = opts.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
    if (typeof this.#maxRetryAfterMs !== "number" || !(this.#maxRetryAfterMs >= 0))
      throw new ValidationError(`WebhookWorkerOptions.maxRetryAfterMs must be a number of milliseconds >= 0, got ${describeValue(this.#maxRetryAfterMs)}`);
    if (opts.clock !== undefined && !hasMethods(opts.clock, ["now"]))
      throw new ValidationError(`WebhookWorkerOptions.clock must be an object with a now() method (a Clock), got ${describeValue(opts.clock)}`);
    this.#clock = opts.clock ?? SystemClock;
    if (opts.userAgent !== undefined && typeof opts.userAgent !== "string")
      throw new ValidationError(`WebhookWorkerOptions.userAgent must be a string, got ${describeValue(opts.userAgent)}`);
    this.#userAgent = opts.userAgent ?? "taquba-webhooks";
    this.#ca = readCa(opts.ca);
  }

  /**
   * Makes one delivery attempt of `job`. Resolves when the receiver answered
   * 2xx. Throws `PermanentError` for a malformed job, a refused address, a
   * non-retryable answer or a cancelled job, and `WebhookDeliveryError`
   * (retryable, with `retryAfterMs` when the server gave one) otherwise.
   */
  process(job: ClaimedJob): Promise<void> {
    if (!tracing()) return this.#deliver(job);
    return traced(
      "taquba.webhook.delivery",
      { "taquba.queue": job.queueName, "taquba.job.id": job.id, "taquba.attempt": job.attempt },
      "client",
      () => this.#deliver(job),
      () => ({ "taquba.outcome": "delivered" }),
      (e) => deliveryFailure(job, e),
      ownHeader(job.headers, RUN_TRACEPARENT),
    );
  }

  async #deliver(job: ClaimedJob): Promise<void> {
    let req: DecodedWebhookRequest;
    try {
      req = decodeWebhookJob(job.headers, job.payload);
    } catch (err) {
      if (err instanceof InvalidWebhookRequestError) throw new PermanentError(err.message, { cause: err });
      throw err;
    }
    const timeoutMs = req.timeoutMs ?? this.#defaultTimeoutMs;
    // No query, and token-like path segments masked (Slack-style URLs carry their secret in the path).
    const target = `${req.method} ${redactUrl(`${req.url.origin}${req.url.pathname}`)}`;
    if (job.cancelSignal.aborted) throw cancelled(job, target);
    try {
      // The whole attempt (resolve + exchange) fits in timeoutMs, so this lease outlives it.
      await job.lease.ensureAtLeast(timeoutMs);
    } catch (err) {
      if (err instanceof CancelRequestedError) throw cancelled(job, target);
      throw err;
    }

    // Real time, not the injected clock: the socket's timers run on real time whatever the clock says.
    const deadline = Date.now() + timeoutMs;
    const addresses = await this.#resolve(req, target, timeoutMs);
    annotateActiveSpan({ "http.request.method": req.method }); // not the URL: it may come from a sensitive header
    const result = await sendHttp({
      url: req.url,
      method: req.method,
      headers: this.#outgoingHeaders(job.id, req),
      body: req.body,
      timeoutMs: Math.max(1, deadline - Date.now()),
      addresses,
      signal: job.cancelSignal,
      ...(this.#ca === undefined ? {} : { ca: this.#ca }),
    });

    if (result.kind === "response") annotateActiveSpan({ "http.response.status_code": result.status });
    const verdict =
      result.kind === "response" ? classifyResponse(result.status, result.headers["retry-after"], this.#clock.now(), this.#maxRetryAfterMs) : undefined;
    // A 2xx is a delivery even when a cancellation arrived meanwhile: the receiver has it.
    if (verdict?.kind === "delivered") return;
    if (job.cancelSignal.aborted) throw cancelled(job, target);
    if (result.kind === "timeout") throw new WebhookDeliveryError(`${target}: no answer within ${timeoutMs} ms`);
    if (result.kind === "network") throw new WebhookDeliveryError(`${target}: ${errorText(result.error)}`, { cause: result.error });
    if (verdict === undefined) throw new Error("unreachable: a response always has a verdict");
    // The receiver's words are stored as the error: one line, bounded, secrets redacted.
    const said = safeExcerpt(result.bodyExcerpt);
    const excerpt = said === "" ? "" : `: ${said}`;
    if (verdict.kind === "permanent") {
      const rejected = new WebhookRejectedError(`${target}: ${verdict.reason}${excerpt}`, verdict.status);
      throw new PermanentError(rejected.message, { cause: rejected });
    }
    throw new WebhookDeliveryError(`${target}: ${verdict.reason}${excerpt}`, {
      ...(verdict.status === undefined ? {} : { status: verdict.status }),
      ...(verdict.retryAfterMs === undefined ? {} : { retryAfterMs: verdict.retryAfterMs }),
    });
  }

  async #resolve(req: DecodedWebhookRequest, target: string, timeoutMs: number): Promise<ResolvedAddress[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new WebhookDeliveryError(`${target}: resolving the host took longer than ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([resolveAllowedAddresses(this.#policy, req.url.hostname), timeout]);
    } catch (err) {
      if (err instanceof WebhookAddressRefusedError) throw new PermanentError(`${target}: ${err.message}`, { cause: err });
      if (err instanceof WebhookDeliveryError) throw err;
      throw new WebhookDeliveryError(`${target}: resolving the host failed: ${errorText(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  #outgoingHeaders(jobId: string, req: DecodedWebhookRequest): Record<string, string> {
    const out: Record<string, string> = { ...req.headers };
    if (!Object.keys(out).some((k) => k.toLowerCase() === "user-agent")) out["user-agent"] = this.#userAgent;
    // Seconds of this attempt, re-signed on every retry so receivers' replay windows stay meaningful.
    const timestampSec = Math.floor(this.#clock.now() / 1000);
    out[WEBHOOK_ID_HEADER] = jobId;
    out[WEBHOOK_TIMESTAMP_HEADER] = String(timestampSec);
    if (this.#secrets.length > 0) out[WEBHOOK_SIGNATURE_HEADER] = signWebhook(this.#secrets, jobId, timestampSec, req.body);
    return out;
  }
}

/** An error's message, led by its system code (ECONNREFUSED, ENOTFOUND) when the message lacks it. */
function errorText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" && !message.includes(code) ? `${code} ${message}` : message;
}

/** A failed delivery's span: permanent (dead-lettered) or transient (retried, or dead-lettered on the last attempt). */
function deliveryFailure(job: ClaimedJob, e: unknown): { kind: string; attributes: SpanAttributes } {
  const permanent = e instanceof PermanentError;
  return {
    kind: permanent ? "permanent" : "transient",
    attributes: { "taquba.outcome": permanent || job.isLastAttempt() ? "dead_lettered" : "retried" },
  };
}

function cancelled(job: ClaimedJob, target: string): PermanentError {
  return new PermanentError(`${target}: delivery of job ${job.id} was cancelled`);
}

/** Options of {@link runWebhookWorker}: the worker's and the loop's. */
export interface RunWebhookWorkerOptions
  extends WebhookWorkerOptions,
    Pick<RunWorkerOptions, "concurrency" | "leaseMs" | "claimBatch" | "signal" | "onError"> {}

const RUN_WEBHOOK_WORKER_KEYS = optionFields<RunWebhookWorkerOptions>({
  ...WEBHOOK_WORKER_FIELDS,
  concurrency: true,
  leaseMs: true,
  claimBatch: true,
  signal: true,
  onError: true,
});

/**
 * Runs a {@link WebhookWorker} over `queueName` until `opts.signal` aborts
 * (then waits for in-flight deliveries) or the queue closes.
 *
 * @example
 * const ac = new AbortController();
 * const done = runWebhookWorker(queue, "webhooks", { secret, concurrency: 8, signal: ac.signal });
 * // at shutdown
 * ac.abort();
 * await done;
 */
export async function runWebhookWorker(queue: Queue, queueName: string, given: RunWebhookWorkerOptions = {}): Promise<void> {
  // Async: bad options reject the promise, as the loop's own failures do, instead of throwing at the call.
  const { concurrency, leaseMs, claimBatch, signal, onError, ...workerOpts } = readExactOptions(given, RUN_WEBHOOK_WORKER_KEYS, "RunWebhookWorkerOptions");
  const loop = { concurrency, leaseMs, claimBatch, signal, onError } as RunWorkerOptions;
  return await runWorker(queue, queueName, new WebhookWorker(workerOpts as WebhookWorkerOptions), loop);
}
