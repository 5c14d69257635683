/**
 * @module Errors raised while building, sending and verifying webhooks.
 *
 * A delivery ends in one of three ways: delivered, retried later, or given
 * up on. The errors here carry which one applies (`retryable`) so the worker
 * can route them to a nack or a dead-letter, and so a receiver can tell why
 * a verification failed without parsing messages.
 */

import { TaqubaError } from "../errors.js";

/**
 * A webhook request is malformed: bad URL, method, header or timeout, either
 * when it is built or when a delivery job is decoded. Retrying cannot help,
 * so a delivery job carrying one is dead-lettered.
 */
export class InvalidWebhookRequestError extends TaqubaError {
  /** One entry per violation, each naming the field and what was wrong. */
  readonly issues: readonly string[];
  constructor(issues: readonly string[]) {
    super("WEBHOOK_INVALID_REQUEST", `invalid webhook request; fix the request before enqueueing it:\n  - ${issues.join("\n  - ")}`);
    this.issues = issues;
  }
}

/**
 * The target host resolved to an address the outbound policy refuses
 * (loopback, private, link-local, ...). Permanent: the policy or the URL
 * must change.
 */
export class WebhookAddressRefusedError extends TaqubaError {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly addressClass: string,
  ) {
    super(
      "WEBHOOK_ADDRESS_REFUSED",
      `webhook host "${host}" resolves to ${address} (${addressClass}), which outbound deliveries may not reach; ` +
        `use a public address, or allow it explicitly (allowLoopback, allowPrivate or allowedNetworks)`,
    );
  }
}

/**
 * One delivery attempt failed in a way that may succeed later: a 408, 429 or
 * 5xx answer, a timeout, or a network error. `retryAfterMs` is the delay the
 * server asked for through `Retry-After`, already capped; when set, the next
 * attempt should not come sooner.
 */
export class WebhookDeliveryError extends TaqubaError {
  constructor(
    message: string,
    readonly details: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super("WEBHOOK_DELIVERY_FAILED", message, { retryable: true, cause: details.cause });
  }

  /** The HTTP status, when the server answered. */
  get status(): number | undefined {
    return this.details.status;
  }

  /** The server-requested delay before the next attempt, when it gave one. */
  get retryAfterMs(): number | undefined {
    return this.details.retryAfterMs;
  }
}

/**
 * The receiver answered with a status that retrying cannot fix (a 4xx other
 * than 408 and 429, or a redirect). The delivery is dead-lettered.
 */
export class WebhookRejectedError extends TaqubaError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super("WEBHOOK_REJECTED", message);
  }
}

/** Why {@link verifyWebhook} refused a request. */
export type WebhookVerificationFailure = "missing-header" | "invalid-timestamp" | "timestamp-too-old" | "timestamp-too-new" | "no-matching-signature";

/**
 * A received webhook failed verification. Answer it with 400 or 401 and do
 * not act on its body.
 */
export class WebhookVerificationError extends TaqubaError {
  constructor(
    readonly reason: WebhookVerificationFailure,
    detail: string,
  ) {
    super("WEBHOOK_VERIFICATION_FAILED", `webhook verification failed (${reason}): ${detail}`);
  }
}
