/**
 * @module GcsStore: the conformance suite against the JSON API stand-in on
 * loopback (or, with GCS_TEST_BUCKET set, against that real bucket through
 * Application Default Credentials), then prefixes, retries of throttling and
 * 5xx, the 412 mapping, landed retried creates, permanent errors naming the
 * bucket and option validation against the stand-in.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GcsStore, PreconditionFailedError, openStore, StoreRequestError, StoreUnavailableError, ValidationError } from "taquba";
import { startGcsServer, type TestGcsServer } from "../support/gcs-server.js";
import { startSilentServer } from "../support/silent-server.js";
import { describeStoreConformance } from "./conformance.js";

vi.setConfig({ testTimeout: 120_000 });

/** A real bucket to run the conformance suite against instead of the stand-in. */
const realBucket = process.env.GCS_TEST_BUCKET;
const run = `run-${Date.now().toString(36)}`;
let server: TestGcsServer;
let counter = 0;

beforeAll(async () => {
  server = await startGcsServer();
});
afterAll(async () => {
  await server?.stop();
  if (realBucket) {
    // Remove what this run wrote to the real bucket.
    const root = new GcsStore({ bucket: realBucket, prefix: `taquba-test/${run}` });
    for await (const o of root.list("")) await root.delete(o.key);
  }
}, 600_000);

/** A store under a prefix of its own, so tests sharing the bucket start empty. */
function makeStore(retry = { baseDelayMs: 1, maxDelayMs: 5 }): GcsStore {
  return new GcsStore({ bucket: server.bucket, prefix: `t${++counter}`, apiEndpoint: server.endpoint, retry, listPageSize: 300 });
}

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

if (realBucket) {
  describeStoreConformance(`GcsStore on gs://${realBucket}`, {
    makeStore: () => new GcsStore({ bucket: realBucket, prefix: `taquba-test/${run}/t${++counter}` }),
    paginationKeys: 1100,
  });
} else {
  describeStoreConformance("GcsStore on the JSON API stand-in", { makeStore: () => makeStore(), paginationKeys: 1100 });
}

describe.skipIf(realBucket !== undefined)("GcsStore on the stand-in", () => {
  it("keeps stores under different prefixes apart and strips the prefix from listed keys", async () => {
    const a = makeStore();
    const b = makeStore();
    await a.put("k", enc("a"));
    await b.put("k", enc("b"));
    const listed: string[] = [];
    for await (const o of a.list("")) listed.push(o.key);
    expect(listed).toEqual(["k"]);
    expect(dec((await b.get("k"))!.body)).toBe("b");
    const root = new GcsStore({ bucket: server.bucket, apiEndpoint: server.endpoint });
    expect(await root.get(`${a.prefix}k`)).not.toBeNull();
  });

  it("round-trips keys with URL-special characters, each as its own object", async () => {
    const store = makeStore();
    const odd = [
      "a.",
      "a..b",
      "sp ace/x",
      "%41",
      "%2F",
      "q?x=1",
      "h#f",
      "p+l",
      "amp&=;",
      "t\tab",
      "\u00e9/\u00fc",
      "\u{1f600}",
      "~tilde",
      "'quote\"",
      "a:b@c",
      "ends.with.dot./x",
    ];
    for (const key of odd) await store.put(key, enc(key), { ifNoneMatch: "*" });
    for (const key of odd) expect(dec((await store.get(key))!.body), key).toBe(key);
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual([...odd].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    for (const key of odd) await store.delete(key);
    expect(await store.get("%41")).toBeNull();
  });

  it("passes the writer-open capability probe: a second create of the same key fails, then the probe object is removed", async () => {
    const store = makeStore();
    await store.put("probe/1", enc("p"), { ifNoneMatch: "*" });
    // The engine's probe writes different bytes the second time; a store that overwrote would fail it.
    await expect(store.put("probe/1", enc("second"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    expect(dec((await store.get("probe/1"))!.body)).toBe("p");
    await store.delete("probe/1");
    expect(await store.get("probe/1")).toBeNull();
  });

  it("returns the object's generation as its etag, new on every replacement", async () => {
    const store = makeStore();
    const first = await store.put("k", enc("1"));
    const second = await store.put("k", enc("2"));
    expect(first.etag).toMatch(/^\d+$/);
    expect(second.etag).not.toBe(first.etag);
    expect((await store.get("k"))!.etag).toBe(second.etag);
  });

  it("retries 503 and 500 with backoff, then succeeds", async () => {
    const store = makeStore();
    server.failNext(2, { status: 503, reason: "backendError", method: "POST" });
    server.failNext(1, { status: 500, reason: "internalError", method: "GET" });
    const before = server.requests.POST ?? 0;
    await store.put("retried", enc("v"));
    expect((server.requests.POST ?? 0) - before).toBe(3);
    expect(dec((await store.get("retried"))!.body)).toBe("v");
  });

  it("retries 429 on list pages and deletes", async () => {
    const store = makeStore();
    await store.put("x", enc("v"));
    server.failNext(2, { status: 429, reason: "rateLimitExceeded", method: "GET" });
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual(["x"]);
    server.failNext(1, { status: 429, reason: "rateLimitExceeded", method: "DELETE" });
    await store.delete("x");
    expect(await store.get("x")).toBeNull();
  });

  it("gives up after maxAttempts with StoreUnavailableError naming the bucket", async () => {
    const store = new GcsStore({
      bucket: server.bucket,
      prefix: `t${++counter}`,
      apiEndpoint: server.endpoint,
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    });
    server.failNext(3, { status: 503, reason: "backendError", method: "GET" });
    const err = await store.get("k").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toContain(`bucket "${server.bucket}"`);
    expect(await store.get("k")).toBeNull();
  });

  it("does not retry a refused credential: one request, a permanent StoreRequestError naming the bucket", async () => {
    const store = makeStore();
    server.failNext(1, { status: 403, reason: "forbidden", method: "GET" });
    const before = server.requests.GET ?? 0;
    const err = await store.get("k").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as StoreRequestError).retryable).toBe(false);
    expect((err as Error).message).toContain(`bucket "${server.bucket}" refused the credentials`);
    expect((server.requests.GET ?? 0) - before).toBe(1);
  });

  it("names a missing bucket and says to create it, for every operation", async () => {
    const store = new GcsStore({ bucket: "no-such-bucket", apiEndpoint: server.endpoint });
    const ops: (() => Promise<unknown>)[] = [
      () => store.get("k"),
      () => store.put("k", enc("v")),
      () => store.put("k", enc("v"), { ifNoneMatch: "*" }),
      () => store.delete("k"),
      async () => {
        for await (const _ of store.list("")) void _;
      },
    ];
    for (const op of ops) {
      const err = await op().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toContain('bucket "no-such-bucket" does not exist; create it first');
    }
  });

  it("treats its own landed write as success when a retried create meets 412", async () => {
    const store = makeStore();
    const other = new GcsStore({ bucket: server.bucket, prefix: store.prefix, apiEndpoint: server.endpoint });
    await other.put("landed", enc("mine"));
    server.failNext(1, { status: 503, reason: "backendError", method: "POST" });
    await expect(store.put("landed", enc("mine"), { ifNoneMatch: "*" })).resolves.toHaveProperty("etag");
    server.failNext(1, { status: 503, reason: "backendError", method: "POST" });
    await expect(store.put("landed", enc("theirs"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
  });

  it("times out a request the service never answers, retries it, then gives up with StoreUnavailableError", async () => {
    const silent = await startSilentServer();
    try {
      const store = new GcsStore({
        bucket: server.bucket,
        apiEndpoint: silent.endpoint,
        requestTimeoutMs: 200,
        retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
      });
      await expect(store.get("k")).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(silent.connections()).toBeGreaterThanOrEqual(2);
    } finally {
      await silent.close();
    }
  });

  it("surfaces a refused connection as StoreUnavailableError after retries", async () => {
    const store = new GcsStore({ bucket: server.bucket, apiEndpoint: "http://127.0.0.1:1", retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    await expect(store.get("k")).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("opens through a gs:// URL with an endpoint option", async () => {
    const store = openStore(`gs://${server.bucket}/via-url/t${++counter}?endpoint=${encodeURIComponent(server.endpoint)}`);
    await store.put("k", enc("v"), { ifNoneMatch: "*" });
    await expect(store.put("k", enc("v"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual(["k"]);
  });

  it("rejects an upload whose body does not match the MD5 it declares (the stand-in checks it like the service)", async () => {
    const boundary = "b0undary";
    const body = Buffer.from(
      `--${boundary}\r\ncontent-type: application/json\r\n\r\n${JSON.stringify({ name: "tampered", md5Hash: "AAAAAAAAAAAAAAAAAAAAAA==" })}\r\n` +
        `--${boundary}\r\ncontent-type: application/octet-stream\r\n\r\nbytes\r\n--${boundary}--`,
    );
    const res = await fetch(`${server.endpoint}/upload/storage/v1/b/${server.bucket}/o?uploadType=multipart`, {
      method: "POST",
      headers: { "content-type": `multipart/related; boundary=${boundary}` },
      body,
    });
    expect(res.status).toBe(400);
    expect(await new GcsStore({ bucket: server.bucket, apiEndpoint: server.endpoint }).get("tampered")).toBeNull();
  });

  it.each([
    [{ bucket: "Bad_Bucket" }, "invalid bucket name"],
    [{ bucket: "ab" }, "invalid bucket name"],
    [{ bucket: "a..b" }, "invalid bucket name"],
    [{ bucket: "ok-bucket", apiEndpoint: "ftp://x" }, "apiEndpoint"],
    [{ bucket: "ok-bucket", prefix: "../x" }, "'..' segment"],
    [{ bucket: "ok-bucket", retry: { maxAttempts: 1e30 } }, "maxAttempts"],
    [{ bucket: "ok-bucket", retry: { maxDelayMs: Infinity } }, "maxAttempts"],
    [{ bucket: "ok-bucket", listPageSize: 0 }, "listPageSize"],
    [{ bucket: "ok-bucket", requestTimeoutMs: 0.5 }, "requestTimeoutMs"],
  ])("rejects options %j with a ValidationError", (opts, why) => {
    let err: unknown;
    try {
      new GcsStore(opts as ConstructorParameters<typeof GcsStore>[0]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(why);
  });
});
