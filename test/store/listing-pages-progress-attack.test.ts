/**
 * @module Attacks on a paged listing held to the store contract by a
 * service that answers the same page again under a new continuation token
 * each time (a token check alone never ends that listing), that answers a
 * page a third time, or that lists a key out of order after a page it
 * answered again. Each listing ends with exactly the keys asked for, or
 * fails with StoreRequestError; it never loops for ever, takes a key twice
 * or skips one it cannot know.
 */
import { describe, expect, it } from "vitest";
import { StoreRequestError } from "taquba";
import { ListingPages, MAX_EMPTY_PAGES, MAX_PAGES_WITHOUT_PROGRESS } from "../../runtime/store/listing-pages.js";
import { run, type Page } from "./fixtures/listing-pages-run.js";

/** A service whose first page comes back for every token, each time under a token never given before. */
function* firstPageForEver(keys: string[]): Iterable<Page> {
  for (let n = 1; n < 2 * MAX_EMPTY_PAGES; n++) yield [keys, true, `fresh-${n}`];
}

describe("a listing whose service answers the same page under new tokens", () => {
  it("is refused after a bounded number of pages that list nothing new, taking each key once", () => {
    const outcome = run(new ListingPages('bucket "b"', "in/", "in/", undefined), firstPageForEver(["in/0", "in/1", "in/2"]));
    expect(outcome.error).toBeInstanceOf(StoreRequestError);
    expect((outcome.error as Error).message).toMatch(
      /list of "in\/" was refused: bucket "b" answered \d+ truncated pages in a row that list no key past those it listed before them/,
    );
    expect(outcome.taken).toEqual(["in/0", "in/1", "in/2"]);
    expect(outcome.pagesAsked).toBe(MAX_PAGES_WITHOUT_PROGRESS + 2);
  });

  it("is refused when the page answered again is empty, or holds only keys outside the prefix or before start-after", () => {
    for (const keys of [[], ["a/0", "a/1"], ["in/0", "in/1"]]) {
      const outcome = run(new ListingPages('bucket "b"', "in/", "in/", "in/5"), firstPageForEver(keys));
      expect(outcome.error).toBeInstanceOf(StoreRequestError);
      expect(outcome.taken).toEqual([]);
    }
  });

  it("lists exactly once each when a page is answered again up to the bound, then the listing goes on", () => {
    const again: Page[] = Array.from({ length: MAX_PAGES_WITHOUT_PROGRESS }, (_, i) => [["in/2", "in/3"], true, `again-${i}`]);
    const outcome = run(new ListingPages('bucket "b"', "in/", "in/", undefined), [
      [["in/0", "in/1"], true, "t1"],
      [["in/2", "in/3"], true, "t2"],
      ...again,
      [["in/3", "in/4"], false, undefined],
    ]);
    expect(outcome.error).toBeUndefined();
    expect(outcome.taken).toEqual(["in/0", "in/1", "in/2", "in/3", "in/4"]);
  });

  it("refuses a key never listed that comes out of order after a page answered again", () => {
    const outcome = run(new ListingPages('bucket "b"', "in/", "in/", undefined), [
      [["in/2", "in/3"], true, "t1"],
      [["in/4", "in/5"], true, "t2"],
      [["in/4", "in/5"], true, "t3"],
      [["in/1", "in/6"], false, undefined],
    ]);
    expect(outcome.error).toBeInstanceOf(StoreRequestError);
    expect((outcome.error as Error).message).toMatch(/listed "in\/1" after "in\/5", out of the key order/);
    expect(outcome.taken).toEqual(["in/2", "in/3", "in/4", "in/5"]);
  });

  it("takes a page answered a third time as answered again, not as keys out of order", () => {
    const outcome = run(new ListingPages('bucket "b"', "in/", "in/", undefined), [
      [["in/0", "in/1"], true, "t1"],
      [["in/0", "in/1"], true, "t2"],
      [["in/0", "in/1"], true, "t3"],
      [["in/2"], false, undefined],
    ]);
    expect(outcome.error).toBeUndefined();
    expect(outcome.taken).toEqual(["in/0", "in/1", "in/2"]);
  });

  it("never refuses a service that ignores start-after or the prefix for many pages, while its listing moves on", () => {
    const before: Page[] = Array.from({ length: 4 * MAX_PAGES_WITHOUT_PROGRESS }, (_, i) => [[`a/${i}x`, `a/${i}y`], true, `outside-${i}`]);
    const skipped: Page[] = Array.from({ length: 4 * MAX_PAGES_WITHOUT_PROGRESS }, (_, i) => [[`in/0${i}x`, `in/0${i}y`], true, `early-${i}`]);
    const outcome = run(new ListingPages('bucket "b"', "in/", "in/", "in/1"), [...before, ...skipped, [["in/2", "in/3", "z/0"], false, undefined]]);
    expect(outcome.error).toBeUndefined();
    expect(outcome.taken).toEqual(["in/2", "in/3"]);
  });

  it("leaves out, for a listing whose order is held elsewhere, the keys of a page answered again, however often", () => {
    const pages = new ListingPages('bucket "b"', "", "in/", undefined);
    const listed: string[] = [];
    const answered: Page[] = [
      [["in/0", "in/1"], true, "t1"],
      [["in/0", "in/1"], true, "t2"],
      [["in/0", "in/1"], true, "t3"],
      [["in/2"], false, undefined],
    ];
    for (const [keys, truncated, token] of answered) {
      for (const k of keys) if (!pages.listedAgain(k)) listed.push(k);
      pages.next(truncated, token);
    }
    expect(listed).toEqual(["in/0", "in/1", "in/2"]);
  });

  it("counts a service's progress in the order it lists in, not UTF-8's, when given it", () => {
    // UTF-16 order puts a key with a surrogate pair before one with U+E000; UTF-8 order the other way round.
    const utf16 = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const pages = new ListingPages('container "c"', "", "in/", undefined, utf16);
    pages.listedAgain("in/\u{1F600}");
    expect(pages.next(true, "t1")).toBe("t1");
    for (let i = 0; i < 2 * MAX_PAGES_WITHOUT_PROGRESS; i++) {
      pages.listedAgain(`in/\ue000${i}`);
      expect(pages.next(true, `t-${i}`)).toBe(`t-${i}`);
    }
  });
});
