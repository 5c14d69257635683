/**
 * @module The id of a request pending at most once (a group's retention
 * request): a request id the owner accepts, the same for the same time and
 * key, another for another key or time, and none for a time a ULID cannot
 * hold.
 */
import { describe, expect, it } from "vitest";
import { isRequestId, onceRequestId, requestTime } from "../../runtime/client/inbox-layout.js";

describe("onceRequestId", () => {
  it("is a request id carrying the time, stable for a key and distinct across keys and times", () => {
    const t = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
    const ids = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const id = onceRequestId(t, `groupRetain\ng-${i}`)!;
      expect(isRequestId(id), id).toBe(true);
      expect(requestTime(id)).toBe(t);
      expect(onceRequestId(t, `groupRetain\ng-${i}`)).toBe(id);
      ids.add(id);
    }
    expect(ids.size).toBe(500);
    expect(onceRequestId(t + 1, "groupRetain\ng-0")).not.toBe(onceRequestId(t, "groupRetain\ng-0"));
    expect(isRequestId(onceRequestId(0, "")!)).toBe(true);
  });

  it("has none for a time a ULID cannot hold", () => {
    for (const t of [Number.NaN, -1, 1.5, Number.POSITIVE_INFINITY, 1e30, 2 ** 48]) expect(onceRequestId(t, "k"), String(t)).toBeUndefined();
  });
});
