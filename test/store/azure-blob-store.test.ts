/**
 * @module AzureBlobStore against Azurite on loopback: the conformance suite,
 * prefixes, credentials, retries of throttling and 5xx, the 409/412 mapping,
 * landed retried creates, and permanent errors naming the container.
 */
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AzureBlobStore, MissingDependencyError, PreconditionFailedError, openStore, StoreRequestError, StoreUnavailableError, ValidationError } from "taquba";
import { startAzurite, type TestAzurite } from "../support/azurite.js";
import { startSilentServer } from "../support/silent-server.js";
import { describeStoreConformance } from "./conformance.js";

// Azurite takes 10 to 40 ms a write here, so the 1,100-key listing test needs minutes under load.
vi.setConfig({ testTimeout: 180_000 });

let azurite: TestAzurite;
let counter = 0;
const CONTAINER = "taquba-test";

beforeAll(async () => {
  azurite = await startAzurite();
  await azurite.createContainer(CONTAINER);
}, 60_000);
afterAll(async () => {
  await azurite?.stop();
});

/** A store under a prefix of its own, so tests sharing the container start empty. */
function makeStore(retry = { baseDelayMs: 1, maxDelayMs: 5 }): AzureBlobStore {
  return new AzureBlobStore({
    container: CONTAINER,
    prefix: `t${++counter}`,
    account: azurite.account,
    accountKey: azurite.accountKey,
    endpoint: azurite.endpoint,
    retry,
    // Small pages, so the conformance suite's 1,100-key listing crosses several.
    listPageSize: 300,
  });
}

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

describeStoreConformance("AzureBlobStore on Azurite", { makeStore: () => makeStore(), paginationKeys: 1100 });

describe("AzureBlobStore", () => {
  it("keeps stores under different prefixes apart and strips the prefix from listed keys", async () => {
    const a = makeStore();
    const b = makeStore();
    await a.put("k", enc("a"));
    await b.put("k", enc("b"));
    const listed: string[] = [];
    for await (const o of a.list("")) listed.push(o.key);
    expect(listed).toEqual(["k"]);
    expect(dec((await b.get("k"))!.body)).toBe("b");
    const root = new AzureBlobStore({ container: CONTAINER, account: azurite.account, accountKey: azurite.accountKey, endpoint: azurite.endpoint });
    expect(await root.get(`${a.prefix}k`)).not.toBeNull();
  });

  it("round-trips keys with URL-special characters, each as its own object", async () => {
    const store = makeStore();
    const odd = [".a", "a..b", "sp ace/x", "%41", "%2F", "q?x=1", "h#f", "p+l", "amp&=;", "t\tab", "\u00e9/\u00fc", "\u{1f600}", "~tilde", "'quote\"", "a:b@c"];
    for (const key of odd) await store.put(key, enc(key), { ifNoneMatch: "*" });
    for (const key of odd) expect(dec((await store.get(key))!.body), key).toBe(key);
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual([...odd].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    for (const key of odd) await store.delete(key);
    expect(await store.get("%41")).toBeNull();
  });

  it("refuses keys with a segment ending in '.', which Azure may fold into another blob, writing nothing", async () => {
    const store = makeStore();
    for (const key of ["a.", "dir./x", "x/y.", "x/.../y"]) {
      await expect(store.put(key, enc("v"), { ifNoneMatch: "*" }), key).rejects.toThrow(/ends with '\.'/);
      await expect(store.get(key)).rejects.toBeInstanceOf(ValidationError);
      await expect(store.delete(key)).rejects.toBeInstanceOf(ValidationError);
    }
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual([]);
    expect(() => new AzureBlobStore({ container: CONTAINER, account: "acct", prefix: "p./q" })).toThrow(ValidationError);
  });

  it("connects with a connection string", async () => {
    const store = new AzureBlobStore({ container: CONTAINER, prefix: `t${++counter}`, connectionString: azurite.connectionString });
    await store.put("k", enc("v"), { ifNoneMatch: "*" });
    expect(dec((await store.get("k"))!.body)).toBe("v");
    await expect(store.put("k", enc("w"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
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

  it("retries 503 ServerBusy and 500 with backoff, then succeeds", async () => {
    const store = makeStore();
    azurite.failNext(2, { status: 503, code: "ServerBusy", method: "PUT" });
    azurite.failNext(1, { status: 500, code: "InternalError", method: "GET" });
    const putsBefore = azurite.requests.PUT ?? 0;
    await store.put("retried", enc("v"));
    expect((azurite.requests.PUT ?? 0) - putsBefore).toBe(3);
    expect(dec((await store.get("retried"))!.body)).toBe("v");
  });

  it("retries 429 on list pages", async () => {
    const store = makeStore();
    await store.put("x", enc("v"));
    azurite.failNext(2, { status: 429, code: "TooManyRequests", method: "GET" });
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual(["x"]);
  });

  it("gives up after maxAttempts with StoreUnavailableError naming the container", async () => {
    const store = makeStore({ baseDelayMs: 1, maxDelayMs: 2 });
    const limited = new AzureBlobStore({
      container: CONTAINER,
      prefix: store.prefix,
      account: azurite.account,
      accountKey: azurite.accountKey,
      endpoint: azurite.endpoint,
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    });
    azurite.failNext(3, { status: 503, code: "ServerBusy", method: "GET" });
    const err = await limited.get("k").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toContain(`container "${CONTAINER}"`);
    // The budget was spent exactly: the next call reaches the service.
    expect(await limited.get("k")).toBeNull();
  });

  it("does not retry a refused credential: one request, a permanent StoreRequestError naming the container", async () => {
    const store = makeStore();
    azurite.failNext(1, { status: 403, code: "AuthenticationFailed", method: "GET" });
    const before = azurite.requests.GET ?? 0;
    const err = await store.get("k").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as StoreRequestError).retryable).toBe(false);
    expect((err as Error).message).toContain(`container "${CONTAINER}" of account "${azurite.account}"`);
    expect((err as Error).message).toContain("credentials");
    expect((azurite.requests.GET ?? 0) - before).toBe(1);
  });

  it("refuses a wrong account key for real, without retrying", async () => {
    const store = new AzureBlobStore({
      container: CONTAINER,
      account: azurite.account,
      accountKey: Buffer.from("not the key").toString("base64"),
      endpoint: azurite.endpoint,
    });
    const err = await store.put("k", enc("v")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as Error).message).toContain("refused the credentials");
  });

  it("names a missing container and says to create it", async () => {
    const store = new AzureBlobStore({ container: "no-such-container", account: azurite.account, accountKey: azurite.accountKey, endpoint: azurite.endpoint });
    for (const op of [() => store.get("k"), () => store.put("k", enc("v")), () => store.put("k", enc("v"), { ifNoneMatch: "*" })]) {
      const err = await op().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toContain('container "no-such-container" of account "devstoreaccount1" does not exist; create it first');
    }
  });

  it("maps 409 BlobAlreadyExists and 412 ConditionNotMet on a create to PreconditionFailedError", async () => {
    const store = makeStore();
    azurite.failNext(1, { status: 409, code: "BlobAlreadyExists", method: "PUT" });
    await expect(store.put("c", enc("v"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    azurite.failNext(1, { status: 412, code: "ConditionNotMet", method: "PUT" });
    await expect(store.put("c", enc("v"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    expect(await store.get("c")).toBeNull();
  });

  it("treats its own landed write as success when a retried create meets the conflict", async () => {
    const store = makeStore();
    const other = new AzureBlobStore({
      container: CONTAINER,
      prefix: store.prefix,
      account: azurite.account,
      accountKey: azurite.accountKey,
      endpoint: azurite.endpoint,
    });
    // As if our first attempt landed but its answer was lost: the bytes are
    // there and our attempt saw a 503.
    await other.put("landed", enc("mine"));
    azurite.failNext(1, { status: 503, code: "ServerBusy", method: "PUT" });
    await expect(store.put("landed", enc("mine"), { ifNoneMatch: "*" })).resolves.toHaveProperty("etag");
    azurite.failNext(1, { status: 503, code: "ServerBusy", method: "PUT" });
    await expect(store.put("landed", enc("theirs"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
  });

  it("times out a request the service never answers, retries it, then gives up with StoreUnavailableError", async () => {
    const silent = await startSilentServer();
    try {
      const store = new AzureBlobStore({
        container: CONTAINER,
        account: azurite.account,
        accountKey: azurite.accountKey,
        endpoint: silent.endpoint,
        requestTimeoutMs: 200,
        retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
      });
      await expect(store.put("k", enc("v"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(silent.connections()).toBeGreaterThanOrEqual(2);
    } finally {
      await silent.close();
    }
  });

  it("surfaces a refused connection as StoreUnavailableError after retries", async () => {
    const store = new AzureBlobStore({
      container: CONTAINER,
      account: azurite.account,
      accountKey: azurite.accountKey,
      endpoint: "http://127.0.0.1:1",
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
    });
    expect(store.endpoint).toBe("http://127.0.0.1:1/devstoreaccount1");
    await expect(store.get("k")).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("opens through an azure:// URL with an endpoint option, using Azurite's published key", async () => {
    const base = azurite.endpoint.slice(0, azurite.endpoint.lastIndexOf("/"));
    const store = openStore(`azure://${azurite.account}/${CONTAINER}/via-url/t${++counter}?endpoint=${encodeURIComponent(base)}`, { env: {} });
    await store.put("k", enc("v"), { ifNoneMatch: "*" });
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual(["k"]);
  });

  const identityInstalled = (() => {
    try {
      createRequire(import.meta.url).resolve("@azure/identity");
      return true;
    } catch {
      return false;
    }
  })();

  // The project does not install @azure/identity; a machine that has it skips this.
  it.skipIf(identityInstalled)("asks for @azure/identity when no credential is given and it is not installed, and writes nothing", async () => {
    const store = new AzureBlobStore({ container: CONTAINER, prefix: `t${++counter}`, account: azurite.account, endpoint: azurite.endpoint });
    const before = azurite.requests.PUT ?? 0;
    const err = await store.put("k", enc("v")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as Error).message).toContain("npm install @azure/identity");
    expect(azurite.requests.PUT ?? 0).toBe(before);
    // The failure is not cached: the next call tries again (and fails the same way here).
    await expect(store.get("k")).rejects.toBeInstanceOf(MissingDependencyError);
  });

  it("says which package to install when an optional SDK is missing", async () => {
    const { loadOptionalPackage } = await import("../../runtime/store/request-retry.js");
    const err = await loadOptionalPackage("@azure/identity-not-installed", "AzureBlobStore with DefaultAzureCredential").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as Error).message).toContain("npm install @azure/identity-not-installed");
    // Other import failures are not disguised as a missing package.
    const broken = new Error("SyntaxError in the package");
    await expect(loadOptionalPackage("x", "y", () => Promise.reject(broken))).rejects.toBe(broken);
  });

  it.each([
    [{ container: "Bad_Name", account: "devstoreaccount1" }, "invalid container name"],
    [{ container: "ok-name", account: "Bad-Account" }, "invalid account name"],
    [{ container: "ok-name" }, "invalid account name"],
    [{ container: "ok-name", account: "acct", accountKey: "k", connectionString: "x" }, "at most one"],
    [{ container: "ok-name", connectionString: " " }, "connectionString is empty"],
    [{ container: "ok-name", account: "acct", endpoint: "ftp://x" }, "http or https"],
    [{ container: "ok-name", account: "acct", endpoint: "not a url" }, "not a URL"],
    [{ container: "ok-name", account: "acct", prefix: "a//b" }, "empty segment"],
    [{ container: "ok-name", account: "acct", retry: { maxAttempts: 0 } }, "maxAttempts"],
    [{ container: "ok-name", account: "acct", retry: { baseDelayMs: Number.NaN } }, "maxAttempts"],
    [{ container: "ok-name", account: "acct", listPageSize: 5001 }, "listPageSize"],
    [{ container: "ok-name", account: "acct", requestTimeoutMs: Number.POSITIVE_INFINITY }, "requestTimeoutMs"],
  ])("rejects options %j with a ValidationError", (opts, why) => {
    let err: unknown;
    try {
      new AzureBlobStore(opts as ConstructorParameters<typeof AzureBlobStore>[0]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(why);
  });
});
