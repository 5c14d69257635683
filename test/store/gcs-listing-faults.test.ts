/**
 * @module A GcsStore over a service that ignores page tokens (answers the
 * first page again, with the same token): the listing fails with
 * StoreRequestError naming it instead of looping for ever, and a listing
 * that fits one page is served as before.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GcsStore, StoreRequestError } from "taquba";
import { startGcsServer, type TestGcsServer } from "../support/gcs-server.js";

let server: TestGcsServer;
beforeAll(async () => {
  server = await startGcsServer();
});
afterAll(async () => {
  await server.stop();
});

async function listed(store: GcsStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) keys.push(o.key);
  return keys;
}

describe("a GcsStore over a service that ignores page tokens", () => {
  it("fails a listing of several pages with StoreRequestError, and serves a listing of one page", async () => {
    const store = new GcsStore({
      bucket: server.bucket,
      prefix: "tokens/",
      apiEndpoint: server.endpoint,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      listPageSize: 2,
    });
    for (let i = 0; i < 5; i++) await store.put(`in/${i}`, new Uint8Array([i]));
    await store.put("one/0", new Uint8Array([9]));
    server.ignorePageTokens(true);
    try {
      const err = await listed(store, "in/").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toMatch(/list of "in\/" was refused: bucket "taquba-test" answered the same continuation token twice/);
      expect(await listed(store, "one/")).toEqual(["one/0"]);
    } finally {
      server.ignorePageTokens(false);
    }
    expect(await listed(store, "in/")).toEqual(["in/0", "in/1", "in/2", "in/3", "in/4"]);
  });
});
