/**
 * @module An S3Store over a server whose listings depart from S3's (some
 * S3-compatible services and proxies): one that ignores start-after or the
 * prefix, repeats each page, ignores continuation tokens, or says a page is
 * truncated without a token. Each listing either lists exactly the keys
 * under the prefix after start-after, once each and in order, or fails
 * with StoreRequestError naming the listing; it never hangs. An engine
 * over such a store opens, reopens and keeps its commits, or fails typed,
 * never fenced by itself.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, S3Store, StoreRequestError, WriteBatch } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import type { ListingFault } from "../support/s3-server.js";

const server = useS3Server();
let counter = 0;
const key = (n: number) => `in/${String(n).padStart(3, "0")}`;

/** A store under a fresh prefix holding `in/000`..`in/019`, and keys before and after `in/` that no listing of it may show. */
async function filled(): Promise<S3Store> {
  const store = new S3Store({ bucket: server.bucket, prefix: `faults-${++counter}/`, clientConfig: { ...server.clientConfig, maxAttempts: 1 } });
  for (const k of ["a/before", "im/9", ...Array.from({ length: 20 }, (_, i) => key(i)), "in0", "io/1", "z/after"]) await store.put(k, new Uint8Array([1]));
  return store;
}

async function listed(store: S3Store, prefix: string, startAfter?: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix, startAfter === undefined ? {} : { startAfter })) keys.push(o.key);
  return keys;
}

const expected = (from: number) => Array.from({ length: 20 - from }, (_, i) => key(from + i));

describe("an S3Store over listings that depart from S3's", () => {
  for (const fault of ["ignores start-after", "ignores prefix", "repeats pages"] as const) {
    it(`lists exactly the keys asked for when the server ${fault}`, async () => {
      const store = await filled();
      server.listWith({ fault, pageKeys: 3 });
      try {
        expect(await listed(store, "in/")).toEqual(expected(0));
        expect(await listed(store, "in/", key(6))).toEqual(expected(7));
        // Mid-page and between keys: after a key that is not stored.
        expect(await listed(store, "in/", `${key(10)}x`)).toEqual(expected(11));
        expect(await listed(store, "in/", key(19))).toEqual([]);
        expect(await listed(store, "nothing/")).toEqual([]);
      } finally {
        server.listWith({});
      }
    });
  }

  for (const fault of ["ignores continuation tokens", "truncated without token"] as const) {
    it(`fails a listing with StoreRequestError, never hanging nor cutting it short, when the server ${fault}`, async () => {
      const store = await filled();
      server.listWith({ fault, pageKeys: 3 });
      try {
        const err = await listed(store, "in/").then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(StoreRequestError);
        expect((err as Error).message).toMatch(/list of "in\/" was refused: .*continuation token/);
        // A listing of one page needs no token.
        expect(await listed(store, "in/", key(16))).toEqual(expected(17));
      } finally {
        server.listWith({});
      }
    });
  }

  const engineCases: ListingFault[] = ["ignores start-after", "ignores prefix", "repeats pages"];
  for (const fault of engineCases) {
    it(
      `an engine opens, reopens and keeps every commit when the server ${fault}`,
      async () => {
        const store = new S3Store({ bucket: server.bucket, prefix: `engine-faults-${++counter}/`, clientConfig: server.clientConfig });
        // A neighbour whose keys sort after the engine's: a listing that ignores the prefix meets them.
        const neighbour = new S3Store({ bucket: server.bucket, prefix: `engine-faults-${counter}/zz/`, clientConfig: server.clientConfig });
        // Pages of a few keys; a listing that ignores the prefix walks every key of the bucket, so larger pages there.
        server.listWith({ fault, pageKeys: fault === "ignores prefix" ? 100 : 4 });
        try {
          for (let round = 0; round < 3; round++) {
            const engine = await Engine.open(store, { checkpointWalObjects: 0, flushIntervalMs: 0 });
            for (let i = 0; i < 5; i++) await engine.commit(new WriteBatch().put(`k/${round}/${i}`, new Uint8Array([round, i])));
            if (round === 1) await engine.checkpoint();
            await engine.close();
            const other = await Engine.open(neighbour, { checkpointWalObjects: 0 }).catch((e: unknown) => e);
            expect(other).not.toBeInstanceOf(FencedError);
            if (other instanceof Engine) await other.close();
          }
          const engine = await Engine.open(store, { checkpointWalObjects: 0 });
          for (let round = 0; round < 3; round++) for (let i = 0; i < 5; i++) expect(engine.get(`k/${round}/${i}`)).toEqual(new Uint8Array([round, i]));
          await engine.close();
        } finally {
          server.listWith({});
        }
      },
      HEAVY_TEST_MS,
    );
  }

  it(
    "an engine's open fails with StoreRequestError, never hanging, when the server ignores continuation tokens",
    async () => {
      const store = new S3Store({ bucket: server.bucket, prefix: `engine-faults-${++counter}/`, clientConfig: server.clientConfig });
      const engine = await Engine.open(store, { checkpointWalObjects: 0, flushIntervalMs: 0 });
      for (let i = 0; i < 6; i++) await engine.commit(new WriteBatch().put(`k/${i}`, new Uint8Array([i])));
      await engine.close();
      server.listWith({ fault: "ignores continuation tokens", pageKeys: 3 });
      try {
        const err = await Engine.open(store, { checkpointWalObjects: 0 }).then(
          async (e) => {
            await e.close();
            return undefined;
          },
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(StoreRequestError);
        expect((err as Error).message).toMatch(/answered the same continuation token twice/);
      } finally {
        server.listWith({});
      }
      const again = await Engine.open(store, { checkpointWalObjects: 0 });
      for (let i = 0; i < 6; i++) expect(again.get(`k/${i}`)).toEqual(new Uint8Array([i]));
      await again.close();
    },
    HEAVY_TEST_MS,
  );
});
