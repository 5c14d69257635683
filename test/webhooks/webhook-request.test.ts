/**
 * @module Webhook requests encoded as queue jobs and decoded back, with every
 * validation problem reported.
 */
import { describe, expect, it } from "vitest";
import { decodeWebhookJob, encodeWebhookHeaders, enqueueWebhook, InvalidWebhookRequestError, webhookEnqueueRequest, type WebhookEnqueueRequest } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);

function issuesOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidWebhookRequestError);
    return (e as InvalidWebhookRequestError).issues;
  }
  throw new Error("expected an InvalidWebhookRequestError");
}

describe("webhook request encoding", () => {
  it("round-trips through job headers and payload", () => {
    const r = webhookEnqueueRequest(
      "hooks",
      {
        url: "https://example.com/in?x=1",
        method: "PUT",
        headers: { "Content-Type": "application/json", "X-Tenant": "acme" },
        timeoutMs: 5_000,
        body: '{"a":1}',
      },
      { priority: 3, dedupKey: "order-1", maxAttempts: 7, runAt: 42, headers: { tenant_id: "acme" } },
    );
    expect(r.queueName).toBe("hooks");
    expect(r.options).toEqual({
      priority: 3,
      dedupKey: "order-1",
      maxAttempts: 7,
      runAt: 42,
      headers: {
        tenant_id: "acme",
        "webhook.url": "https://example.com/in?x=1",
        "webhook.method": "PUT",
        "webhook.timeout_ms": "5000",
        "http.Content-Type": "application/json",
        "http.X-Tenant": "acme",
      },
    });
    const back = decodeWebhookJob(r.options.headers, r.payload);
    expect(back.url.href).toBe("https://example.com/in?x=1");
    expect(back.method).toBe("PUT");
    expect(back.timeoutMs).toBe(5_000);
    expect(back.headers).toEqual({ "Content-Type": "application/json", "X-Tenant": "acme" });
    expect(new TextDecoder().decode(back.body)).toBe('{"a":1}');
  });

  it("defaults to POST, an empty body and the worker's timeout", () => {
    const r = webhookEnqueueRequest("hooks", { url: new URL("http://example.com/") });
    expect(r.options).toEqual({ headers: { "webhook.url": "http://example.com/", "webhook.method": "POST" } });
    expect(r.payload).toEqual(new Uint8Array());
    const back = decodeWebhookJob(r.options.headers, r.payload);
    expect(back.method).toBe("POST");
    expect(back.timeoutMs).toBeUndefined();
    // A job without a method header (written by hand) is a POST too.
    expect(decodeWebhookJob({ "webhook.url": "http://example.com/" }, new Uint8Array()).method).toBe("POST");
  });

  it("lists every problem of a bad request", () => {
    const issues = issuesOf(() =>
      encodeWebhookHeaders({
        url: "ftp://example.com/",
        method: "GE T",
        timeoutMs: 0,
        headers: { "Bad Name": "x", "X-Ok": "line\nbreak", "webhook-signature": "forged", Host: "other", "content-length": "5" },
      }),
    );
    expect(issues.join("\n")).toMatch(/ftp:/);
    expect(issues.join("\n")).toMatch(/method "GE T"/);
    expect(issues.join("\n")).toMatch(/timeout 0 ms/);
    expect(issues.join("\n")).toMatch(/"Bad Name"/);
    expect(issues.join("\n")).toMatch(/"X-Ok" has a value/);
    expect(issues.join("\n")).toMatch(/"webhook-signature" is set by the delivery worker/);
    expect(issues.join("\n")).toMatch(/"Host" is set by the delivery worker/);
    expect(issues.join("\n")).toMatch(/"content-length"/);
    expect(issuesOf(() => encodeWebhookHeaders({ url: "not a url" }))[0]).toMatch(/not an absolute URL/);
    expect(issuesOf(() => encodeWebhookHeaders({ url: "https://x.test/", method: "CONNECT" }))[0]).toMatch(/CONNECT/);
    expect(issuesOf(() => encodeWebhookHeaders({ url: "https://x.test/", timeoutMs: 10 * 60_000 + 1 }))[0]).toMatch(/timeout/);
    expect(issuesOf(() => encodeWebhookHeaders({ url: "https://x.test/", timeoutMs: 1.5 }))[0]).toMatch(/timeout/);
    expect(issuesOf(() => encodeWebhookHeaders({ url: "https://x.test/", headers: { "X-A": "1", "x-a": "2" } }))[0]).toMatch(/twice/);
  });

  it("refuses extra job headers in the webhook's own prefixes", () => {
    expect(issuesOf(() => webhookEnqueueRequest("hooks", { url: "https://x.test/" }, { headers: { "webhook.url": "https://evil.test/" } }))[0]).toMatch(
      /reserved for the webhook/,
    );
    expect(issuesOf(() => webhookEnqueueRequest("hooks", { url: "https://x.test/" }, { headers: { "http.X": "1" } }))).toHaveLength(1);
  });

  it("decoding names what is wrong with a job and ignores foreign headers", () => {
    expect(issuesOf(() => decodeWebhookJob({}, new Uint8Array()))[0]).toMatch(/webhook.url is missing/);
    expect(issuesOf(() => decodeWebhookJob({ "webhook.url": "https://x.test/", "webhook.timout_ms": "5" }, new Uint8Array()))[0]).toMatch(
      /"webhook.timout_ms" is not a webhook setting/,
    );
    expect(issuesOf(() => decodeWebhookJob({ "webhook.url": "https://x.test/", "webhook.timeout_ms": "soon" }, new Uint8Array()))[0]).toMatch(
      /not a whole number/,
    );
    expect(issuesOf(() => decodeWebhookJob({ "webhook.url": "https://x.test/", "webhook.method": "A B" }, new Uint8Array()))[0]).toMatch(/method/);
    expect(issuesOf(() => decodeWebhookJob({ "webhook.url": "https://x.test/", "http.Connection": "close" }, new Uint8Array()))[0]).toMatch(/Connection/);
    const ok = decodeWebhookJob({ "webhook.url": "https://x.test/", tenant_id: "acme", callback_url: "https://y.test/" }, enc("b"));
    expect(ok.headers).toEqual({});
  });

  it("enqueueWebhook passes the built job to the queue", async () => {
    const seen: WebhookEnqueueRequest[] = [];
    const queue = {
      async enqueue(queueName: string, payload: Uint8Array, options: WebhookEnqueueRequest["options"]) {
        seen.push({ queueName, payload, options });
        return { jobId: "job-1", newlyEnqueued: true };
      },
    };
    await expect(enqueueWebhook(queue, "hooks", { url: "https://x.test/", body: enc("hi") })).resolves.toEqual({ jobId: "job-1", newlyEnqueued: true });
    expect(seen[0]!.options.headers["webhook.url"]).toBe("https://x.test/");
    await expect(enqueueWebhook(queue, "hooks", { url: "gopher://x.test/" })).rejects.toBeInstanceOf(InvalidWebhookRequestError);
    expect(seen).toHaveLength(1);
  });
});
