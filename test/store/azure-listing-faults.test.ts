/**
 * @module An AzureBlobStore over a service that ignores markers (answers the
 * first page again, with the same marker): the listing fails with
 * StoreRequestError naming the container instead of looping for ever, and a
 * listing that fits one page is served as before.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AzureBlobStore, StoreRequestError } from "taquba";
import { startAzurite, type TestAzurite } from "../support/azurite.js";

// Azurite takes 10 to 40 ms a write here, more under load.
vi.setConfig({ testTimeout: 120_000 });

const CONTAINER = "taquba-test";
let azurite: TestAzurite;
beforeAll(async () => {
  azurite = await startAzurite();
  await azurite.createContainer(CONTAINER);
}, 60_000);
afterAll(async () => {
  await azurite?.stop();
});

/** The keys listed under `prefix`; a listing that runs past 100 keys is cut there (one that loops would never end). */
async function listed(store: AzureBlobStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) if (keys.push(o.key) >= 100) break;
  return keys;
}

describe("an AzureBlobStore over a service that ignores markers", () => {
  it("fails a listing of several pages with StoreRequestError, and serves a listing of one page", async () => {
    const store = new AzureBlobStore({
      container: CONTAINER,
      prefix: "markers",
      account: azurite.account,
      accountKey: azurite.accountKey,
      endpoint: azurite.endpoint,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      listPageSize: 2,
    });
    for (let i = 0; i < 5; i++) await store.put(`in/${i}`, new Uint8Array([i]));
    await store.put("one/0", new Uint8Array([9]));
    azurite.ignoreMarkers(true);
    try {
      const err = await listed(store, "in/").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toMatch(/list of "in\/" was refused: container "taquba-test" of account "\w+" answered the same continuation token twice/);
      expect(await listed(store, "one/")).toEqual(["one/0"]);
    } finally {
      azurite.ignoreMarkers(false);
    }
    expect(await listed(store, "in/")).toEqual(["in/0", "in/1", "in/2", "in/3", "in/4"]);
  });
});
