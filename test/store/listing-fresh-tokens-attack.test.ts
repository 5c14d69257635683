/**
 * @module Attack on the stores' paged listings by a service that ignores
 * continuation tokens and answers its first page again each time under a
 * token it never gave before (a token check alone never ends that
 * listing). An S3, GCS or Azure listing of several pages fails with
 * StoreRequestError naming it, having listed no key twice; a listing of
 * one page is served; the same store lists exactly once the service
 * follows its tokens again.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AzureBlobStore, GcsStore, S3Store, StoreRequestError, type ObjectStore } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { startGcsServer, type TestGcsServer } from "../support/gcs-server.js";
import { startAzurite, type TestAzurite } from "../support/azurite.js";

// Azurite takes 10 to 40 ms a write here, more under load.
vi.setConfig({ testTimeout: 120_000 });

const s3 = useS3Server();
let gcs: TestGcsServer;
let azurite: TestAzurite;
const CONTAINER = "taquba-test";
beforeAll(async () => {
  gcs = await startGcsServer();
  azurite = await startAzurite();
  await azurite.createContainer(CONTAINER);
}, 60_000);
afterAll(async () => {
  await gcs?.stop();
  await azurite?.stop();
});

/** The keys listed under `prefix` and the error that ended the listing; cut at 200 keys (a listing that loops would never end). */
async function listing(store: ObjectStore, prefix: string): Promise<{ keys: string[]; error?: unknown }> {
  const keys: string[] = [];
  try {
    for await (const o of store.list(prefix)) if (keys.push(o.key) >= 200) break;
  } catch (error) {
    return { keys, error };
  }
  return { keys };
}

const KEYS = Array.from({ length: 7 }, (_, i) => `in/${i}`);

/** Fills `store`, then lists it while `faulty(true)` and after `faulty(false)`. */
async function attack(store: ObjectStore, faulty: (on: boolean) => void): Promise<void> {
  for (const k of KEYS) await store.put(k, new Uint8Array([1]));
  await store.put("one/0", new Uint8Array([9]));
  faulty(true);
  try {
    const { keys, error } = await listing(store, "in/");
    expect(error).toBeInstanceOf(StoreRequestError);
    expect((error as Error).message).toMatch(
      /list of "in\/" was refused: .* answered \d+ truncated pages in a row that list no key past those it listed before them/,
    );
    expect(new Set(keys).size).toBe(keys.length);
    expect(await listing(store, "one/")).toEqual({ keys: ["one/0"] });
  } finally {
    faulty(false);
  }
  expect(await listing(store, "in/")).toEqual({ keys: KEYS });
}

describe("a store over a service that answers its first page again under new tokens", () => {
  it("S3: refuses the listing instead of looping for ever", async () => {
    const store = new S3Store({ bucket: s3.bucket, prefix: "fresh-tokens/", clientConfig: { ...s3.clientConfig, maxAttempts: 1 } });
    await attack(store, (on) => s3.listWith(on ? { fault: "ignores continuation tokens, giving new ones", pageKeys: 2 } : {}));
  });

  it("GCS: refuses the listing instead of looping for ever", async () => {
    const store = new GcsStore({
      bucket: gcs.bucket,
      prefix: "fresh-tokens/",
      apiEndpoint: gcs.endpoint,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      listPageSize: 2,
    });
    await attack(store, (on) => gcs.ignorePageTokens(on ? "giving new ones" : false));
  });

  it("Azure: refuses the listing instead of looping for ever", async () => {
    const store = new AzureBlobStore({
      container: CONTAINER,
      prefix: "fresh-tokens",
      account: azurite.account,
      accountKey: azurite.accountKey,
      endpoint: azurite.endpoint,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      listPageSize: 2,
    });
    await attack(store, (on) => azurite.ignoreMarkers(on ? "giving new ones" : false));
  });
});
