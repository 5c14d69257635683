/**
 * @module A paged listing whose service answers many empty truncated pages
 * in a row, each under a token never given before: S3 does so while it
 * walks past a long run of delete markers. The listing goes on through
 * them (far more than the few pages answered again it tolerates) and lists
 * every key once, in order; an S3Store over s3rver and an engine over it
 * open, commit and reopen through them. A service that answers empty pages
 * for ever is still refused after a bounded number, and one that repeats
 * a token at once.
 */
import { describe, expect, it } from "vitest";
import { Engine, S3Store, StoreRequestError, WriteBatch } from "taquba";
import { ListingPages, MAX_EMPTY_PAGES, MAX_PAGES_WITHOUT_PROGRESS } from "../../runtime/store/listing-pages.js";
import { useS3Server } from "../support/use-s3-server.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { run, type Page } from "./fixtures/listing-pages-run.js";

let fresh = 0;
const empties = (n: number): Page[] => Array.from({ length: n }, () => [[], true, `fresh-${++fresh}`]);

describe("a listing through empty truncated pages under fresh tokens", () => {
  it("goes on through runs of them far longer than the pages answered again it tolerates, taking every key once", () => {
    const outcome = run(new ListingPages('bucket "b"', "in/", "in/", undefined), [
      ...empties(MAX_EMPTY_PAGES),
      [["in/0", "in/1"], true, "t1"],
      ...empties(50 * MAX_PAGES_WITHOUT_PROGRESS),
      [["in/2"], true, "t2"],
      ...empties(MAX_EMPTY_PAGES),
      [["in/3"], false, undefined],
    ]);
    expect(outcome.error).toBeUndefined();
    expect(outcome.taken).toEqual(["in/0", "in/1", "in/2", "in/3"]);
  });

  it("is refused after a bounded number of them in a row: a service answering empty pages for ever", () => {
    function* forEver(): Iterable<Page> {
      yield [["in/0"], true, "t0"];
      for (let n = 0; n < 10 * MAX_EMPTY_PAGES; n++) yield [[], true, `for-ever-${n}`];
    }
    const outcome = run(new ListingPages('bucket "b"', "in/", "in/", undefined), forEver());
    expect(outcome.error).toBeInstanceOf(StoreRequestError);
    expect((outcome.error as Error).message).toMatch(
      new RegExp(`list of "in/" was refused: bucket "b" answered ${MAX_EMPTY_PAGES + 1} truncated pages in a row that list no key`),
    );
    expect(outcome.pagesAsked).toBe(MAX_EMPTY_PAGES + 2);
    expect(outcome.taken).toEqual(["in/0"]);
  });

  it("still refuses, among them, a token given twice and a page answered again more than tolerated", () => {
    const twice = run(new ListingPages('bucket "b"', "in/", "in/", undefined), [...empties(100), [[], true, "same"], ...empties(5), [[], true, "same"]]);
    expect((twice.error as Error).message).toMatch(/answered the same continuation token twice/);
    const again: Page[] = Array.from({ length: MAX_PAGES_WITHOUT_PROGRESS + 1 }, (_, i) => [["in/0"], true, `again-${i}`]);
    const repeated = run(new ListingPages('bucket "b"', "in/", "in/", undefined), [
      ...empties(100),
      [["in/0"], true, "t0"],
      ...again,
      [["in/1"], false, undefined],
    ]);
    expect(repeated.error).toBeInstanceOf(StoreRequestError);
    expect((repeated.error as Error).message).toMatch(/truncated pages in a row that list no key past those it listed before them/);
    expect(repeated.taken).toEqual(["in/0"]);
  });
});

const server = useS3Server();
let counter = 0;
const key = (n: number) => `in/${String(n).padStart(3, "0")}`;

async function listed(store: S3Store, prefix: string, startAfter?: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix, startAfter === undefined ? {} : { startAfter })) keys.push(o.key);
  return keys;
}

describe("an S3Store over a service answering empty truncated pages before each page", () => {
  it("lists exactly the keys asked for, once each and in order", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: `empty-pages-${++counter}/`, clientConfig: { ...server.clientConfig, maxAttempts: 1 } });
    for (const k of ["a/before", ...Array.from({ length: 10 }, (_, i) => key(i)), "z/after"]) await store.put(k, new Uint8Array([1]));
    server.listWith({ pageKeys: 3, emptyPages: 4 * MAX_PAGES_WITHOUT_PROGRESS });
    try {
      expect(await listed(store, "in/")).toEqual(Array.from({ length: 10 }, (_, i) => key(i)));
      expect(await listed(store, "in/", key(6))).toEqual([key(7), key(8), key(9)]);
      expect(await listed(store, "nothing/")).toEqual([]);
    } finally {
      server.listWith({});
    }
  });

  it("refuses the listing when the empty pages repeat their token, never looping for ever", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: `empty-pages-${++counter}/`, clientConfig: { ...server.clientConfig, maxAttempts: 1 } });
    await store.put("in/0", new Uint8Array([1]));
    server.listWith({ emptyPages: 2, emptyTokens: "repeated" });
    try {
      const err = await listed(store, "in/").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toMatch(/list of "in\/" was refused: bucket ".*" answered the same continuation token twice/);
    } finally {
      server.listWith({});
    }
  });

  it(
    "serves an engine that opens, commits, checkpoints and reopens through them",
    async () => {
      const store = new S3Store({ bucket: server.bucket, prefix: `empty-pages-engine-${++counter}/`, clientConfig: server.clientConfig });
      server.listWith({ pageKeys: 2, emptyPages: 2 * MAX_PAGES_WITHOUT_PROGRESS });
      try {
        for (let round = 0; round < 3; round++) {
          const engine = await Engine.open(store, { checkpointWalObjects: 0, flushIntervalMs: 0 });
          for (let i = 0; i < 4; i++) await engine.commit(new WriteBatch().put(`k/${round}/${i}`, new Uint8Array([round, i])));
          if (round === 1) await engine.checkpoint();
          await engine.close();
        }
        const engine = await Engine.open(store, { checkpointWalObjects: 0 });
        for (let round = 0; round < 3; round++) for (let i = 0; i < 4; i++) expect(engine.get(`k/${round}/${i}`)).toEqual(new Uint8Array([round, i]));
        await engine.close();
      } finally {
        server.listWith({});
      }
    },
    HEAVY_TEST_MS,
  );
});
