/**
 * Acceptance: the "Stores" section of the public API contract.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { InjectedFaultError } from "../../runtime/store/with-faults.js";
import { LocalStore, MemoryStore, PreconditionFailedError, S3Store, openStore, withCounting, withFaults, withLatency, type ObjectStore } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { collect, dec, enc } from "./support.js";

/** The ObjectStore contract, run against each store. */
async function exerciseContract(store: ObjectStore): Promise<void> {
  expect(await store.get("a/missing")).toBeNull();

  const put = await store.put("a/1", enc("one"));
  expect(typeof put.etag).toBe("string");
  const got = await store.get("a/1");
  expect(got).not.toBeNull();
  expect(got!.body).toBeInstanceOf(Uint8Array);
  expect(dec(got!.body)).toBe("one");
  expect(typeof got!.etag).toBe("string");

  // Create-if-absent never overwrites.
  await expect(store.put("a/1", enc("other"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
  expect(dec((await store.get("a/1"))!.body)).toBe("one");
  await store.put("a/2", enc("two"), { ifNoneMatch: "*" });

  // Listing: prefix, key order, sizes, startAfter.
  await store.put("a/0", enc("zero!"));
  await store.put("b/x", enc("x"));
  const listed = await collect(store.list("a/"));
  expect(listed).toEqual([
    { key: "a/0", size: 5 },
    { key: "a/1", size: 3 },
    { key: "a/2", size: 3 },
  ]);
  expect((await collect(store.list("a/", { startAfter: "a/0" }))).map((o) => o.key)).toEqual(["a/1", "a/2"]);

  // Delete: absent keys are not an error.
  await store.delete("a/1");
  await store.delete("a/1");
  await store.delete("never/existed");
  expect(await store.get("a/1")).toBeNull();
  expect((await collect(store.list("a/"))).map((o) => o.key)).toEqual(["a/0", "a/2"]);
}

describe("ObjectStore interface", () => {
  it("has the documented method shapes", () => {
    expectTypeOf<ObjectStore["get"]>().toEqualTypeOf<(key: string) => Promise<{ body: Uint8Array; etag: string } | null>>();
    expectTypeOf<ObjectStore["put"]>().parameters.toEqualTypeOf<[key: string, body: Uint8Array, opts?: { ifNoneMatch?: "*" }]>();
    expectTypeOf<ObjectStore["put"]>().returns.toEqualTypeOf<Promise<{ etag: string }>>();
    expectTypeOf<ObjectStore["delete"]>().toEqualTypeOf<(key: string) => Promise<void>>();
    expectTypeOf<ObjectStore["list"]>().returns.toEqualTypeOf<AsyncIterable<{ key: string; size: number }>>();
    expectTypeOf<ObjectStore["list"]>().parameter(1).toEqualTypeOf<{ startAfter?: string } | undefined>();
  });
});

describe("MemoryStore", () => {
  it("implements the contract", async () => {
    const store: ObjectStore = new MemoryStore();
    await exerciseContract(store);
  });
});

describe("LocalStore", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "taquba-acc-local-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("implements the contract, and a second instance over the same directory sees the data", async () => {
    await exerciseContract(new LocalStore(join(dir, "one")));
    const again = new LocalStore(join(dir, "one"));
    expect(dec((await again.get("a/0"))!.body)).toBe("zero!");
  });
});

describe("S3Store", () => {
  const server = useS3Server();

  it("takes { bucket, prefix?, client?, clientConfig? }", () => {
    expectTypeOf<ConstructorParameters<typeof S3Store>[0]>().toHaveProperty("bucket").toEqualTypeOf<string>();
    expectTypeOf<ConstructorParameters<typeof S3Store>[0]>().toHaveProperty("prefix").toEqualTypeOf<string | undefined>();
    expectTypeOf<ConstructorParameters<typeof S3Store>[0]>().toHaveProperty("client").toEqualTypeOf<S3Client | undefined>();
    expectTypeOf<ConstructorParameters<typeof S3Store>[0]>().toHaveProperty("clientConfig").toEqualTypeOf<S3ClientConfig | undefined>();
  });

  it("implements the contract against an S3 server", async () => {
    await exerciseContract(new S3Store({ bucket: server.bucket, prefix: "acceptance", clientConfig: server.clientConfig }));
  });
});

describe("openStore", () => {
  it("memory:// opens a fresh memory store", async () => {
    const a = openStore("memory://");
    const b = openStore("memory://");
    expect(a).toBeInstanceOf(MemoryStore);
    await a.put("k", enc("v"));
    expect(await b.get("k")).toBeNull();
    await exerciseContract(openStore("memory://"));
  });

  it("file:///abs/dir opens a LocalStore in that directory", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taquba-acc-url-"));
    try {
      const url = pathToFileURL(dir).href;
      expect(url.startsWith("file:///")).toBe(true);
      const store = openStore(url);
      expect(store).toBeInstanceOf(LocalStore);
      await store.put("x/y", enc("z"));
      expect(dec((await new LocalStore(dir).get("x/y"))!.body)).toBe("z");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("s3://bucket/prefix opens an S3Store", () => {
    expect(openStore("s3://some-bucket/some/prefix?endpoint=http://127.0.0.1:1&region=us-east-1")).toBeInstanceOf(S3Store);
  });

  it("rejects an unknown scheme with a typed error", () => {
    expect(() => openStore("ftp://x")).toThrowError(/memory:\/\//);
  });
});

describe("store wrappers", () => {
  it("withLatency(store, { ms, jitterMs? }) keeps the contract", async () => {
    await exerciseContract(withLatency(new MemoryStore(), { ms: 0 }));
    const slow = withLatency(new MemoryStore(), { ms: 20, jitterMs: 0 });
    const t0 = performance.now();
    await slow.get("k");
    expect(performance.now() - t0).toBeGreaterThanOrEqual(15);
  });

  it("withFaults(store, { failureRate, seed?, ops? }) fails the covered operations only", async () => {
    const inner = new MemoryStore();
    const faulty = withFaults(inner, { failureRate: 1, seed: 42, ops: ["get"] });
    await faulty.put("k", enc("v")); // puts are not covered
    await expect(faulty.get("k")).rejects.toBeInstanceOf(InjectedFaultError);
    const never = withFaults(inner, { failureRate: 0 });
    expect(dec((await never.get("k"))!.body)).toBe("v");
  });

  it("withCounting(store).counts has { gets, puts, deletes, lists, bytesIn, bytesOut }", async () => {
    const store = withCounting(new MemoryStore());
    expect(store.counts).toEqual({ gets: 0, puts: 0, deletes: 0, lists: 0, bytesIn: 0, bytesOut: 0 });
    await store.put("a", enc("abcd"));
    await store.get("a");
    await store.get("missing");
    await store.delete("a");
    await collect(store.list(""));
    expect(store.counts).toEqual({ gets: 2, puts: 1, deletes: 1, lists: 1, bytesIn: 4, bytesOut: 4 });
    expectTypeOf(store.counts).toEqualTypeOf<Readonly<{ gets: number; puts: number; deletes: number; lists: number; bytesIn: number; bytesOut: number }>>();
  });
});
