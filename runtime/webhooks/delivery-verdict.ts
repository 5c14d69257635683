/**
 * @module What an HTTP answer means for a delivery: done, retry, or give up.
 *
 * Pure: the status code and the `Retry-After` header in, a verdict out.
 */

/** Default ceiling on a server-requested `Retry-After` delay: one hour. */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60 * 60_000;

/** The outcome of one delivery attempt. */
export type DeliveryVerdict =
  | { kind: "delivered"; status: number }
  | { kind: "retry"; reason: string; status?: number; retryAfterMs?: number }
  | { kind: "permanent"; reason: string; status: number };

/**
 * Parses a `Retry-After` value, either delta-seconds (`"120"`) or an HTTP
 * date (`"Wed, 21 Oct 2015 07:28:00 GMT"`), into a delay from `nowMs`,
 * capped at `maxMs`. A date in the past gives 0. Returns `undefined` when
 * the value is absent or unreadable, so the queue's own backoff applies.
 */
export function parseRetryAfter(value: string | readonly string[] | undefined, nowMs: number, maxMs = DEFAULT_MAX_RETRY_AFTER_MS): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value) as string | undefined;
  if (v === undefined) return undefined;
  const s = v.trim();
  if (/^\d+$/.test(s)) return Math.min(Number(s) * 1000, maxMs);
  // Only dates with a weekday, a day and a zone, as HTTP dates have; Date.parse alone accepts far more.
  if (!/^[A-Za-z]{3},? /.test(s) || !/(GMT|UTC|[+-]\d{4})$/.test(s)) return undefined;
  const at = Date.parse(s);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - nowMs), maxMs);
}

/**
 * Classifies a response status:
 * - 2xx: delivered;
 * - 408, 429 and 5xx: retry, honouring `Retry-After`;
 * - 3xx: permanent. Redirects are not followed because the `Location`
 *   could point at an address the outbound check refuses (an internal
 *   service), and following it would bypass that check; configure the
 *   final URL instead;
 * - other 4xx and anything else: permanent.
 */
export function classifyResponse(
  status: number,
  retryAfter: string | readonly string[] | undefined,
  nowMs: number,
  maxRetryAfterMs = DEFAULT_MAX_RETRY_AFTER_MS,
): DeliveryVerdict {
  if (status >= 200 && status <= 299) return { kind: "delivered", status };
  if (status === 408 || status === 429 || (status >= 500 && status <= 599)) {
    const retryAfterMs = parseRetryAfter(retryAfter, nowMs, maxRetryAfterMs);
    const reason = `receiver answered ${status}${retryAfterMs === undefined ? "" : `, Retry-After ${retryAfterMs} ms`}`;
    return retryAfterMs === undefined ? { kind: "retry", reason, status } : { kind: "retry", reason, status, retryAfterMs };
  }
  if (status >= 300 && status <= 399) {
    return {
      kind: "permanent",
      status,
      reason: `receiver answered ${status} (redirect); redirects are not followed because the target could bypass the outbound address check, so set the webhook URL to the final address`,
    };
  }
  return { kind: "permanent", status, reason: `receiver answered ${status}; a retry would get the same answer` };
}
