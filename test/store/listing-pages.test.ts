/**
 * @module A paged listing held to the store contract page by page: keys
 * outside the prefix or at or before start-after left out, a page answered
 * again skipped, and a key out of order, a token answered twice or a
 * truncated page without one refused with StoreRequestError naming the
 * listing.
 */
import { describe, expect, it } from "vitest";
import { StoreRequestError } from "taquba";
import { MemoryStore, type ListedObject, type ListOptions, type ObjectStore } from "taquba";
import { ListingPages, listedInOrder } from "../../runtime/store/listing-pages.js";

/** The keys of `pages` the listing takes, page by page (each page: its keys, whether truncated, its token). */
function run(pages: ListingPages, answered: [string[], boolean, string | undefined][]): string[] {
  const taken: string[] = [];
  for (const [keys, truncated, token] of answered) {
    for (const k of keys) if (pages.take(k)) taken.push(k);
    pages.next(truncated, token);
  }
  return taken;
}

describe("a listing's pages held to the store contract", () => {
  it("leaves out keys outside the prefix, at or before start-after, and a page answered again", () => {
    const pages = new ListingPages('bucket "b"', "p/in/", "in/", "p/in/02");
    const taken = run(pages, [
      [["p/a", "p/in/00", "p/in/01", "p/in/02"], true, "t1"],
      [["p/in/03", "p/in/04"], true, "t2"],
      [["p/in/03", "p/in/04"], true, "t3"],
      [["p/in/05", "p/io/1", "q/1"], false, undefined],
    ]);
    expect(taken).toEqual(["p/in/03", "p/in/04", "p/in/05"]);
  });

  it("refuses a key out of order that no page before held", () => {
    const pages = new ListingPages('bucket "b"', "in/", "in/", undefined);
    expect(pages.take("in/2")).toBe(true);
    pages.next(true, "t1");
    expect(pages.take("in/3")).toBe(true);
    expect(() => pages.take("in/1")).toThrow(StoreRequestError);
    expect(() => pages.take("in/1")).toThrow(/list of "in\/" was refused: bucket "b" listed "in\/1" after "in\/3", out of the key order/);
  });

  it("refuses a continuation token answered twice, and a truncated page without one", () => {
    const twice = new ListingPages('bucket "b"', "in/", "in/", undefined);
    expect(twice.next(true, "t1")).toBe("t1");
    expect(() => twice.next(true, "t1")).toThrow(/answered the same continuation token twice/);
    for (const token of [undefined, ""]) {
      const none = new ListingPages('bucket "b"', "in/", "in/", undefined);
      expect(() => none.next(true, token)).toThrow(StoreRequestError);
    }
    expect(new ListingPages('bucket "b"', "in/", "in/", undefined).next(false, undefined)).toBeUndefined();
  });
});

/** `inner` whose listings answer `answer(keys it lists)` instead, whatever the prefix and start-after asked. */
function answering(inner: MemoryStore, answer: (keys: string[]) => string[]): ObjectStore {
  return {
    get: (k) => inner.get(k),
    put: (k, b, o) => inner.put(k, b, o),
    delete: (k) => inner.delete(k),
    async *list(_prefix: string, _opts?: ListOptions): AsyncIterable<ListedObject> {
      const keys: string[] = [];
      for await (const o of inner.list("")) keys.push(o.key);
      for (const key of answer(keys)) yield { key, size: 1 };
    },
  };
}

async function inOrder(store: ObjectStore, prefix: string, opts?: ListOptions): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of listedInOrder(store, prefix, "the test store", opts)) keys.push(o.key);
  return keys;
}

describe("a listing acted on in key order", () => {
  it("leaves out keys outside the prefix and at or before start-after, and refuses a key listed again or out of order", async () => {
    const inner = new MemoryStore();
    for (const k of ["a/0", "in/0", "in/1", "in/2", "z/0"]) await inner.put(k, new Uint8Array([1]));
    expect(
      await inOrder(
        answering(inner, (keys) => keys),
        "in/",
        { startAfter: "in/0" },
      ),
    ).toEqual(["in/1", "in/2"]);
    for (const answer of [(keys: string[]) => [...keys, ...keys], (keys: string[]) => keys.reverse()]) {
      const err = await inOrder(answering(inner, answer), "in/").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toMatch(/list of "in\/" was refused: the test store listed "in\/\d" after "in\/\d", out of key order or a second time/);
    }
  });
});
