/**
 * @module S3Store against s3rver on loopback: the conformance suite, prefixes,
 * retries of 5xx and throttling, 412/409 mapping, and landed retried creates.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { PreconditionFailedError, S3Store, StoreUnavailableError, ValidationError } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { describeStoreConformance } from "./conformance.js";

const server = useS3Server();
let counter = 0;

/** A store under a prefix of its own, so tests sharing the bucket start empty. */
function makeStore(retry = { baseDelayMs: 1, maxDelayMs: 5 }): S3Store {
  return new S3Store({ bucket: server.bucket, prefix: `t${++counter}`, clientConfig: server.clientConfig, retry });
}

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describeStoreConformance("S3Store on s3rver", { makeStore: () => makeStore(), paginationKeys: 1100, readsInto: true });

describe("S3Store", () => {
  it("keeps stores under different prefixes apart and strips the prefix from listed keys", async () => {
    const a = makeStore();
    const b = makeStore();
    await a.put("k", enc("a"));
    await b.put("k", enc("b"));
    const listed: string[] = [];
    for await (const o of a.list("")) listed.push(o.key);
    expect(listed).toEqual(["k"]);
    expect(new TextDecoder().decode((await b.get("k"))!.body)).toBe("b");
    // The same objects through a store with no prefix show the full keys.
    const root = new S3Store({ bucket: server.bucket, clientConfig: server.clientConfig });
    expect(await root.get(`${a.prefix}k`)).not.toBeNull();
  });

  it("retries 503 SlowDown and 500 with backoff, then succeeds", async () => {
    const store = makeStore();
    server.failNext(2, { status: 503, code: "SlowDown", method: "PUT" });
    server.failNext(1, { status: 500, code: "InternalError", method: "GET" });
    const putsBefore = server.requests.PUT ?? 0;
    await store.put("retried", enc("v"));
    expect((server.requests.PUT ?? 0) - putsBefore).toBe(3);
    expect(new TextDecoder().decode((await store.get("retried"))!.body)).toBe("v");
  });

  it("retries 429 and list pages", async () => {
    const store = makeStore();
    await store.put("x", enc("v"));
    server.failNext(2, { status: 429, code: "TooManyRequests", method: "GET" });
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual(["x"]);
  });

  it("gives up after maxAttempts with StoreUnavailableError", async () => {
    const store = new S3Store({
      bucket: server.bucket,
      prefix: `t${++counter}`,
      clientConfig: server.clientConfig,
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    });
    server.failNext(3, { status: 503, code: "SlowDown", method: "GET" });
    const err = await store.get("k").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).retryable).toBe(true);
    // The budget was spent exactly: the next call reaches the server.
    expect(await store.get("k")).toBeNull();
  });

  it("does not retry a client error such as 403", async () => {
    const store = makeStore();
    server.failNext(1, { status: 403, code: "AccessDenied", method: "GET" });
    const before = server.requests.GET ?? 0;
    await expect(store.get("k")).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((server.requests.GET ?? 0) - before).toBe(1);
  });

  it("maps 409 ConditionalRequestConflict on a conditional put to PreconditionFailedError", async () => {
    const store = makeStore();
    server.failNext(1, { status: 409, code: "ConditionalRequestConflict", method: "PUT" });
    await expect(store.put("c", enc("v"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    expect(await store.get("c")).toBeNull();
  });

  it("treats its own landed write as success when a retried create-if-absent meets 412", async () => {
    const store = makeStore();
    // The first attempt writes through a second store (as if the request
    // landed but its response was lost); the server then fails our attempt.
    const other = new S3Store({ bucket: server.bucket, prefix: store.prefix, clientConfig: server.clientConfig });
    await other.put("landed", enc("mine"));
    server.failNext(1, { status: 503, code: "SlowDown", method: "PUT" });
    await expect(store.put("landed", enc("mine"), { ifNoneMatch: "*" })).resolves.toHaveProperty("etag");
    // Different bytes are someone else's object.
    server.failNext(1, { status: 503, code: "SlowDown", method: "PUT" });
    await expect(store.put("landed", enc("theirs"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
  });

  it("surfaces a refused connection as StoreUnavailableError after retries", async () => {
    const store = new S3Store({
      bucket: "unreachable",
      clientConfig: { ...server.clientConfig, endpoint: "http://127.0.0.1:1" },
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
    });
    await expect(store.get("k")).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("uses a client it is given", async () => {
    const client = new S3Client(server.clientConfig);
    const store = new S3Store({ bucket: server.bucket, prefix: `t${++counter}`, client });
    expect(store.client).toBe(client);
    await store.put("k", enc("v"));
    expect(await store.get("k")).not.toBeNull();
  });

  it("rejects a bad bucket name or prefix", () => {
    expect(() => new S3Store({ bucket: "" })).toThrow(ValidationError);
    expect(() => new S3Store({ bucket: "b", prefix: "a//b" })).toThrow(ValidationError);
  });
});
