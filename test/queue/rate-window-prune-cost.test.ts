/**
 * @module Rate windows of many keys whose windows are all still open (one
 * claim an hour per tenant, tens of thousands of tenants): dropping ended
 * windows walks every key, so it must not run on every new key past the
 * threshold (that made each claim of a new key cost a walk of all keys);
 * the walks stay few, and the limits still hold for every key.
 */
import { describe, expect, it } from "vitest";
import { RateWindows, resolveRateLimit, slotOf } from "../../runtime/queue/admission.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const HOUR = 3_600_000;

describe("rate windows of many open keys", () => {
  it("drop ended windows a few times, not once per new key, and still hold every key", { timeout: HEAVY_TEST_MS }, () => {
    const windows = new RateWindows();
    const rate = resolveRateLimit({ limit: 1, periodMs: HOUR, key: "{t}" });
    const t0 = 5_000_000;
    const keys = 30_000;
    for (let i = 0; i < keys; i++) {
      const slot = slotOf("q", `t${i}`);
      expect(windows.allowedAt(slot, rate, t0 + i)).toBe(t0 + i);
      windows.take(slot, rate, t0 + i);
    }
    // 20,000 keys past the threshold, all open: a walk each would be 20,000 walks.
    expect(windows.prunes).toBeLessThanOrEqual(3);
    // Every key is still held for its hour, the first included.
    for (const i of [0, 9_999, 10_000, 29_999]) expect(windows.allowedAt(slotOf("q", `t${i}`), rate, t0 + keys)).toBe(t0 + i + HOUR);
    // Once the hour passed for all, a new key drops them.
    const later = t0 + keys + HOUR;
    for (let i = 0; i < 40_000; i++) windows.take(slotOf("q", `u${i}`), rate, later + i);
    expect(windows.has(slotOf("q", "t0"))).toBe(false);
  });
});
