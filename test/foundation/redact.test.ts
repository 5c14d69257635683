/**
 * @module Secrets stay out of error messages: URL redaction, receiver
 * excerpts, JSON parse errors, and the errors of openStore, webhook
 * requests and payload decoding.
 */
import { describe, expect, it } from "vitest";
import {
  createValidator,
  decodeWebhookJob,
  defineSignal,
  enqueueWebhook,
  InvalidWebhookRequestError,
  MemoryStore,
  openStore,
  Queue,
  ValidationError,
} from "taquba";
import { jsonErrorText, looksLikeToken, redactUrl, safeExcerpt } from "../../runtime/redact.js";
import { decodeJobPayload } from "../../runtime/jobs/job-codec.js";
import { decodeStepEnvelope } from "taquba/generated";

const messageOf = async (fn: () => unknown): Promise<string> => {
  try {
    await fn();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("expected a failure");
};

describe("redaction", () => {
  it.each([
    ["s3://AKIAEXAMPLE:wJalrXUtnFEMI@bucket/prefix", "s3://***@bucket/prefix"],
    ["https://user:pw@example.com/a?token=abc&x=1#frag", "https://***@example.com/a?token=***&x=***#***"],
    ["https://hooks.slack.com/services/T0001/B0001/Xy12Ab34Cd56Ef78Gh90Ij12", "https://hooks.slack.com/services/T0001/B0001/***"],
    ["https://example.com/orders/42", "https://example.com/orders/42"],
    ["not a url ?token=abc //u:p@host", "not a url ?token=*** //***@host"],
  ])("redactUrl(%s)", (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it("tells tokens from names", () => {
    for (const t of ["Xy12Ab34Cd56Ef78Gh90Ij12", "a".repeat(32)]) expect(looksLikeToken(t), t).toBe(true);
    for (const n of ["services", "v1", "T0001", "order-2024-11", "1234567890123456"]) expect(looksLikeToken(n), n).toBe(false);
  });

  it("safeExcerpt flattens, redacts and bounds", () => {
    expect(safeExcerpt("a\r\n\tb\u2028c\u0000d")).toBe("a b c d");
    expect(safeExcerpt("see https://u:p@h/x?k=v")).toBe("see https://***@h/x?k=***");
    expect(safeExcerpt("yes ".repeat(250))).toHaveLength(203);
    expect(safeExcerpt(`key ${"Ab1".repeat(20)} end`)).toBe("key *** end");
  });

  it("jsonErrorText never quotes the input", () => {
    for (const text of ['{"ssn":"123-45-6789"', "ssn 123-45-6789", '{"a":1}} ssn 123-45-6789']) {
      let err: unknown;
      try {
        JSON.parse(text);
      } catch (e) {
        err = e;
      }
      expect(jsonErrorText(err)).not.toContain("123-45");
    }
  });
});

describe("messages that used to carry secrets", () => {
  it("openStore does not echo credentials", async () => {
    const m = await messageOf(() => openStore("s3://AKIAEXAMPLE:wJalrXUtnFEMIK7MDENG@bucket/p"));
    expect(m).toMatch(/credentials and ports do not belong/);
    expect(m).not.toContain("AKIAEXAMPLE");
    expect(m).not.toContain("wJalrXUtnFEMIK7MDENG");
    const q = await messageOf(() => openStore("s3://bucket/p?nope=Secret123Secret123Secret"));
    expect(q).not.toContain("Secret123");
  });

  it("InvalidWebhookRequestError does not echo userinfo or query values", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      const err = await enqueueWebhook(queue, "hooks", { url: "ftp://admin:hunter2@example.com/x?token=abc123" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidWebhookRequestError);
      expect((err as Error).message).not.toMatch(/hunter2|abc123/);
      expect((err as Error).message).toContain("ftp://***@example.com/x?token=***");
      const decoded = await messageOf(() => decodeWebhookJob({ "webhook.url": "javascript://u:pw@example.com/?token=abc123" }, new Uint8Array()));
      expect(decoded).not.toMatch(/pw@|abc123/);
    } finally {
      await queue.close();
    }
  });

  it("payload JSON errors do not quote the payload", async () => {
    const pii = new TextEncoder().encode('{"card":"4111 1111 1111 1111"');
    expect(await messageOf(() => decodeJobPayload(pii))).not.toContain("4111");
    expect(await messageOf(() => decodeStepEnvelope(pii))).not.toContain("4111");
    const sig = defineSignal({
      name: "p.s",
      package: "p",
      keyTemplate: "k:{id}",
      params: createValidator(
        "p",
        Object.assign(() => true, { errors: null }),
      ),
      payload: createValidator(
        "q",
        Object.assign(() => true, { errors: null }),
      ),
    });
    const err = await Promise.resolve()
      .then(() => sig.decode(pii))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(JSON.stringify({ m: (err as ValidationError).message, i: (err as ValidationError).issues })).not.toContain("4111");
  });
});
