/**
 * @module Standard Webhooks signing and verification, against the reference
 * signature.
 */
import { describe, expect, it } from "vitest";
import {
  generateWebhookSecret,
  parseWebhookSecret,
  signWebhook,
  ValidationError,
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationFailure,
} from "taquba";

// The published Standard Webhooks example: a receiver built on any
// conforming library must accept what we produce.
const SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SPEC_TS = 1614265330;
const SPEC_BODY = '{"test": 2432232314}';
const SPEC_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

function headersFor(sig: string, id = SPEC_ID, ts = String(SPEC_TS)) {
  return { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig };
}

function failure(fn: () => unknown): WebhookVerificationFailure {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(WebhookVerificationError);
    return (e as WebhookVerificationError).reason;
  }
  throw new Error("expected verification to fail");
}

describe("webhook signing", () => {
  it("matches the Standard Webhooks reference signature", () => {
    expect(signWebhook(SPEC_SECRET, SPEC_ID, SPEC_TS, SPEC_BODY)).toBe(SPEC_SIG);
    // The same key as bare base64 and as bytes.
    const bare = SPEC_SECRET.slice("whsec_".length);
    expect(signWebhook(bare, SPEC_ID, SPEC_TS, SPEC_BODY)).toBe(SPEC_SIG);
    expect(signWebhook(parseWebhookSecret(SPEC_SECRET), SPEC_ID, SPEC_TS, new TextEncoder().encode(SPEC_BODY))).toBe(SPEC_SIG);
  });

  it("signs once per secret while rotating", () => {
    const other = generateWebhookSecret();
    const sig = signWebhook([SPEC_SECRET, other], SPEC_ID, SPEC_TS, SPEC_BODY);
    const parts = sig.split(" ");
    expect(parts).toHaveLength(2);
    expect(parts[0]).toBe(SPEC_SIG);
    // A receiver that holds only the new secret accepts it.
    expect(verifyWebhook(other, headersFor(sig), SPEC_BODY, { now: SPEC_TS * 1000 }).id).toBe(SPEC_ID);
  });

  it("refuses malformed and short secrets", () => {
    expect(() => parseWebhookSecret("whsec_not base64!")).toThrow(ValidationError);
    expect(() => parseWebhookSecret("whsec_c2hvcnQ=")).toThrow(/at least 16 bytes/);
    expect(() => parseWebhookSecret(new Uint8Array(8))).toThrow(ValidationError);
    expect(() => signWebhook([], "id", 1, "")).toThrow(ValidationError);
    expect(() => signWebhook(SPEC_SECRET, "id", 1.5, "")).toThrow(ValidationError);
    const fresh = generateWebhookSecret();
    expect(fresh).toMatch(/^whsec_/);
    expect(parseWebhookSecret(fresh)).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(fresh);
  });

  it("refuses a secret, id, body, headers or options of the wrong kind with a ValidationError, not a TypeError or a wrong answer", () => {
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const throwingHeaders = new Proxy(
      {},
      {
        get() {
          throw new Error("headers gone");
        },
      },
    );
    const headers = headersFor(SPEC_SIG);
    const calls: [() => unknown, string][] = [
      // A number passed parseWebhookSecret's length check (undefined < 32 is false) and came back as the key.
      [() => parseWebhookSecret(12345 as never), "a webhook secret must be a base64 string (optionally whsec_-prefixed) or a Uint8Array, got 12345"],
      [() => signWebhook(revoked.proxy as never, "id", 1, ""), "got a revoked Proxy"],
      [() => signWebhook(SPEC_SECRET, Symbol("id") as never, 1, ""), "a webhook id must be a string, got a symbol"],
      [() => signWebhook(SPEC_SECRET, "id", 1, 5 as never), "a webhook body must be the raw bytes (a Uint8Array) or a string, got 5"],
      [() => verifyWebhook(SPEC_SECRET, headers, revoked.proxy as never, { now: SPEC_TS * 1000 }), "a webhook body must be"],
      [() => verifyWebhook(SPEC_SECRET, revoked.proxy as never, SPEC_BODY, { now: SPEC_TS * 1000 }), "verifyWebhook: reading the webhook-id header threw"],
      [() => verifyWebhook(SPEC_SECRET, throwingHeaders as never, SPEC_BODY, { now: SPEC_TS * 1000 }), "reading the webhook-id header threw: headers gone"],
      [() => verifyWebhook(SPEC_SECRET, headers, SPEC_BODY, revoked.proxy as never), "VerifyWebhookOptions must be an object, got a revoked Proxy"],
      [() => verifyWebhook(SPEC_SECRET, headers, SPEC_BODY, { now: 5n as never }), "verifyWebhook: now must be finite epoch milliseconds, got 5n (a bigint)"],
      [() => verifyWebhook(SPEC_SECRET, headers, SPEC_BODY, { now: SPEC_TS * 1000, toleranceMs: "300000" as never }), "toleranceMs must be a finite number"],
    ];
    for (const [call, message] of calls) {
      let err: unknown;
      try {
        call();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain(message);
    }
    // A header value that is not text is a missing header, not a TypeError from splitting it.
    const numbered = { ...headers, "webhook-signature": 5 };
    expect(() => verifyWebhook(SPEC_SECRET, numbered as never, SPEC_BODY, { now: SPEC_TS * 1000 })).toThrow(WebhookVerificationError);
  });
});

describe("verifyWebhook", () => {
  const now = SPEC_TS * 1000;

  it("accepts the reference delivery and returns its id and time", () => {
    expect(verifyWebhook(SPEC_SECRET, headersFor(SPEC_SIG), SPEC_BODY, { now })).toEqual({ id: SPEC_ID, timestampMs: SPEC_TS * 1000 });
  });

  it("accepts when any of several signatures matches, ignoring other schemes", () => {
    const h = headersFor(`v1a,AAAA v1,${Buffer.alloc(32).toString("base64")} ${SPEC_SIG}`);
    expect(verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now }).id).toBe(SPEC_ID);
  });

  it("reads Headers objects and any header-name case", () => {
    const h = new Headers(headersFor(SPEC_SIG));
    expect(verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now }).id).toBe(SPEC_ID);
    const upper = { "Webhook-Id": SPEC_ID, "Webhook-Timestamp": String(SPEC_TS), "Webhook-Signature": SPEC_SIG };
    expect(verifyWebhook(SPEC_SECRET, upper, SPEC_BODY, { now }).id).toBe(SPEC_ID);
  });

  it("rejects a changed body, id, timestamp or secret", () => {
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor(SPEC_SIG), `${SPEC_BODY} `, { now }))).toBe("no-matching-signature");
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor(SPEC_SIG, "msg_other"), SPEC_BODY, { now }))).toBe("no-matching-signature");
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor(SPEC_SIG, SPEC_ID, String(SPEC_TS + 1)), SPEC_BODY, { now }))).toBe("no-matching-signature");
    expect(failure(() => verifyWebhook(generateWebhookSecret(), headersFor(SPEC_SIG), SPEC_BODY, { now }))).toBe("no-matching-signature");
    // A signature that is not base64 of the right length, and no v1 entry at all.
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor("v1,abc"), SPEC_BODY, { now }))).toBe("no-matching-signature");
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor(SPEC_SIG.replace("v1,", "v2,")), SPEC_BODY, { now }))).toBe("no-matching-signature");
  });

  it("enforces the timestamp tolerance both ways", () => {
    const h = headersFor(SPEC_SIG);
    expect(verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now: now + 5 * 60_000 }).id).toBe(SPEC_ID);
    expect(failure(() => verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now: now + 5 * 60_000 + 1 }))).toBe("timestamp-too-old");
    expect(failure(() => verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now: now - 5 * 60_000 - 1 }))).toBe("timestamp-too-new");
    expect(verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now: now + 3_600_000, toleranceMs: 3_600_000 }).id).toBe(SPEC_ID);
  });

  it("refuses a non-finite tolerance or clock instead of accepting any timestamp", () => {
    const h = headersFor(SPEC_SIG);
    const fiveYears = now + 5 * 365 * 86_400_000;
    for (const toleranceMs of [NaN, Infinity, Number(undefined), -1]) {
      expect(() => verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now: fiveYears, toleranceMs }), String(toleranceMs)).toThrow(ValidationError);
    }
    for (const bad of [NaN, Infinity, -Infinity]) {
      expect(() => verifyWebhook(SPEC_SECRET, h, SPEC_BODY, { now: bad }), String(bad)).toThrow(/now must be finite/);
    }
  });

  it("names missing and malformed headers", () => {
    expect(failure(() => verifyWebhook(SPEC_SECRET, { "webhook-id": SPEC_ID, "webhook-signature": SPEC_SIG }, SPEC_BODY, { now }))).toBe("missing-header");
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor(""), SPEC_BODY, { now }))).toBe("missing-header");
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor(SPEC_SIG, SPEC_ID, "12.5"), SPEC_BODY, { now }))).toBe("invalid-timestamp");
    expect(failure(() => verifyWebhook(SPEC_SECRET, headersFor(SPEC_SIG, SPEC_ID, "-1"), SPEC_BODY, { now }))).toBe("invalid-timestamp");
  });
});
