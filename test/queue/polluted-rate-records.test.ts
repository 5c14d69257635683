/**
 * @module Rate records decoded while `Object.prototype` holds a name their
 * encoding leaves out: a window written without its count (by a writer
 * before counts were kept) and a queue rate limit without a key read them
 * as absent, not as what the prototype holds. A window key that ends at
 * its queue's slash (no kind after it) was read past its end, where an
 * index of `Object.prototype` answered: the sweep took it for a window of
 * the queue's own rate limit.
 */
import { describe, expect, it } from "vitest";
import { decodeRateConfig, decodeRateWindow, parseRateWindowKey } from "../../runtime/queue/rate-records.js";
import { whilePolluted } from "../support/polluted-prototype.js";

const bytesOf = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

describe("rate records under a polluted Object.prototype", () => {
  it("a window without its count counts the times it keeps, whatever the prototype holds as c", async () => {
    const window = bytesOf({ l: 5, p: 1000, u: 2000, t: [1000, 10] });
    await whilePolluted({ c: 4 }, async () => {
      expect(decodeRateWindow(window)).toEqual({ limit: 5, periodMs: 1000, until: 2000, times: [1000, 1010], count: 2 });
    });
  });

  it("a queue rate limit without a key has none, whatever the prototype holds as k", async () => {
    const config = bytesOf({ l: 2, p: 1000 });
    await whilePolluted({ k: "{tenant}" }, async () => {
      expect(decodeRateConfig(config)).toEqual({ limit: 2, periodMs: 1000, key: undefined });
    });
  });

  it("a window key ending at its queue's slash names no window, whatever the prototype holds at the index past its end", async () => {
    for (const kind of ["q", "r"]) {
      await whilePolluted({ "4": kind, "5": kind }, async () => {
        expect(parseRateWindowKey("w/q/")).toBeUndefined();
        expect(parseRateWindowKey("w/qq/")).toBeUndefined();
      });
    }
    expect(parseRateWindowKey("w/q/qtenant-1")).toEqual({ queue: "q", rule: undefined, key: "tenant-1" });
  });
});
