/**
 * @module The bounds of the run result records a process keeps to hand
 * over once: count, bytes, age, a clear of a run's memo, and copies apart
 * from what the caller holds.
 */
import { describe, expect, it } from "vitest";
import { OUTCOME_CACHE_BYTES, OUTCOME_CACHE_ENTRIES, OUTCOME_CACHE_TTL_MS, OutcomeCache } from "../../runtime/workflow/memo/outcome-cache.js";

describe("OutcomeCache", () => {
  it("hands each record over once, as a copy of what it was given", () => {
    const cache = new OutcomeCache(() => 0);
    const bytes = new Uint8Array([1, 2, 3]);
    cache.set("m/memos/a/run/x", bytes);
    bytes.fill(9);
    expect([...cache.take("m/memos/a/run/x")!]).toEqual([1, 2, 3]);
    expect(cache.take("m/memos/a/run/x")).toBeUndefined();
  });

  it("keeps at most its count and bytes, dropping the oldest, and never a record over the byte bound", () => {
    const cache = new OutcomeCache(() => 0);
    for (let i = 0; i < OUTCOME_CACHE_ENTRIES + 10; i++) cache.set(`k${i}`, new Uint8Array(1));
    expect(cache.size).toBe(OUTCOME_CACHE_ENTRIES);
    expect(cache.take("k0")).toBeUndefined();
    expect(cache.take(`k${OUTCOME_CACHE_ENTRIES + 9}`)).toBeDefined();
    const half = OUTCOME_CACHE_BYTES / 2;
    cache.set("big1", new Uint8Array(half));
    cache.set("big2", new Uint8Array(half));
    cache.set("big3", new Uint8Array(half));
    expect(cache.take("big1")).toBeUndefined();
    expect(cache.take("big3")).toBeDefined();
    cache.set("huge", new Uint8Array(OUTCOME_CACHE_BYTES + 1));
    expect(cache.take("huge")).toBeUndefined();
  });

  it("answers only within its age limit, and drops a run's records when its memo is cleared", () => {
    let now = 0;
    const cache = new OutcomeCache(() => now);
    cache.set("m/memos/a/run/x", new Uint8Array(1));
    cache.set("m/memos/ab/run/x", new Uint8Array(1));
    cache.set("m/memos/b/run/x", new Uint8Array(1));
    now = OUTCOME_CACHE_TTL_MS + 1;
    expect(cache.take("m/memos/b/run/x")).toBeUndefined();
    now = 0;
    cache.dropUnder("m/memos/a/");
    expect(cache.take("m/memos/a/run/x")).toBeUndefined();
    expect(cache.take("m/memos/ab/run/x")).toBeDefined();
  });
});
