/**
 * @module inUtf8Order: listings in UTF-16 or UTF-8 order come out in UTF-8
 * byte order, holding back only keys with units at or above U+D800, and a
 * listing that would hold too many is refused.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { StoreRequestError } from "taquba";
import { inUtf8Order } from "../../runtime/store/utf8-order.js";

const utf16 = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const utf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

async function* from<T>(items: readonly T[], seen?: T[]): AsyncIterable<T> {
  for (const item of items) {
    seen?.push(item);
    yield item;
  }
}

async function collect(items: AsyncIterable<{ key: string }>): Promise<string[]> {
  const out: string[] = [];
  for await (const i of items) out.push(i.key);
  return out;
}

// Characters from the ranges where the orders agree and disagree.
const char = fc.constantFrom("a", "b", "/", "\u00e9", "\ud7ff", "\ue000", "\uffff", "\ufffd", "\u{10000}", "\u{1f600}", "\u{10ffff}");
const key = fc.array(char, { minLength: 1, maxLength: 5 }).map((cs) => cs.join(""));

describe("inUtf8Order", () => {
  it("turns any UTF-16-ordered or UTF-8-ordered listing into UTF-8 order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(key, { maxLength: 40 }), async (keys) => {
        const expected = [...keys].sort(utf8);
        for (const order of [utf16, utf8]) {
          const input = [...keys].sort(order).map((k) => ({ key: k }));
          expect(await collect(inUtf8Order(from(input), "test", ""))).toEqual(expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("streams keys without high units at once instead of holding them", async () => {
    const seen: { key: string }[] = [];
    const out: string[] = [];
    for await (const item of inUtf8Order(from([{ key: "a" }, { key: "b" }, { key: "c" }], seen), "test", "")) {
      out.push(item.key);
      // Each key comes out before the next is read.
      expect(seen.length).toBe(out.length);
    }
    expect(out).toEqual(["a", "b", "c"]);
  });

  it("fixes the surrogate against U+FFFD case the way UTF-8 orders it", async () => {
    const input = ["x/\u{1f600}", "x/\ufffd", "y"].map((k) => ({ key: k }));
    expect(await collect(inUtf8Order(from(input), "test", ""))).toEqual(["x/\ufffd", "x/\u{1f600}", "y"]);
  });

  it("refuses a listing that would hold more keys than allowed, naming the listing", async () => {
    const input = Array.from({ length: 6 }, (_, i) => ({ key: `p/\u{1f600}${i}` }));
    const err = await collect(inUtf8Order(from(input), 'container "c"', "p/", 4)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as Error).message).toContain('container "c"');
    expect((err as Error).message).toContain('"p/"');
  });
});
