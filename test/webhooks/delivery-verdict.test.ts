/**
 * @module What an HTTP answer means for a delivery, and Retry-After parsing.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_RETRY_AFTER_MS } from "taquba";
import { classifyResponse, parseRetryAfter } from "../../runtime/webhooks/delivery-verdict.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");

describe("response classification", () => {
  it("2xx is delivered", () => {
    for (const s of [200, 201, 202, 204, 299]) expect(classifyResponse(s, undefined, NOW)).toEqual({ kind: "delivered", status: s });
  });

  it("408, 429 and 5xx retry, with Retry-After when given", () => {
    for (const s of [408, 429, 500, 502, 503, 504, 599]) expect(classifyResponse(s, undefined, NOW).kind).toBe("retry");
    expect(classifyResponse(503, "7", NOW)).toMatchObject({ kind: "retry", status: 503, retryAfterMs: 7_000 });
    expect(classifyResponse(429, "Thu, 01 Jan 2026 00:00:30 GMT", NOW)).toMatchObject({ kind: "retry", retryAfterMs: 30_000 });
    expect(classifyResponse(503, undefined, NOW)).not.toHaveProperty("retryAfterMs");
  });

  it("other 4xx and redirects are permanent", () => {
    for (const s of [400, 401, 403, 404, 410, 413, 422]) expect(classifyResponse(s, "5", NOW)).toMatchObject({ kind: "permanent", status: s });
    const redirect = classifyResponse(302, undefined, NOW);
    expect(redirect.kind).toBe("permanent");
    expect(redirect.kind === "permanent" && redirect.reason).toMatch(/address check/);
    expect(classifyResponse(600, undefined, NOW).kind).toBe("permanent");
  });
});

describe("Retry-After parsing", () => {
  it("reads seconds and HTTP dates, caps and floors them", () => {
    expect(parseRetryAfter("0", NOW)).toBe(0);
    expect(parseRetryAfter(" 120 ", NOW)).toBe(120_000);
    expect(parseRetryAfter("999999", NOW)).toBe(DEFAULT_MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter("120", NOW, 60_000)).toBe(60_000);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:02:00 GMT", NOW)).toBe(120_000);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", NOW)).toBe(0);
    expect(parseRetryAfter(["3", "9"], NOW)).toBe(3_000);
  });

  it("ignores what it cannot read, leaving the queue's backoff", () => {
    for (const v of [undefined, "", "soon", "-5", "1.5", "2026-01-01", "Thu, 01 Jan 2026 99:00:00 GMT"]) {
      expect(parseRetryAfter(v, NOW), String(v)).toBeUndefined();
    }
  });
});
