/**
 * @module The ULID generator behind job ids, run ids and request ids: the
 * same ids as ulid's own monotonic factory from the same random draws,
 * across new, repeated, earlier and missing times and carries through the
 * random part.
 */
import { monotonicFactory } from "ulid";
import { describe, expect, it } from "vitest";
import { monotonicUlids, pooledUlids } from "../../runtime/queue/ulid-source.js";

/** A seeded generator of numbers in [0, 1), so both factories see the same draws. */
function seeded(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

describe("monotonicUlids", () => {
  it("makes the ids ulid's monotonic factory makes from the same draws", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const ours = monotonicUlids(seeded(seed));
      const theirs = monotonicFactory(seeded(seed));
      let t = 1_700_000_000_000 + seed;
      for (let i = 0; i < 500; i++) {
        // New milliseconds, repeats, a clock that goes back.
        const step = [0, 0, 1, 0, -3, 7, 0, 1][(i * seed) % 8]!;
        t += step;
        expect(ours(t)).toBe(theirs(t));
      }
    }
  });

  it("carries through random digits at their maximum, and refuses to go past the last one, as ulid does", () => {
    // The last three random digits drawn as Z: the next ids in the millisecond carry.
    const draws = () => {
      let n = 0;
      return () => (n++ % 16 < 3 ? 0.999_999 : 0.1);
    };
    const ours = monotonicUlids(draws());
    const theirs = monotonicFactory(draws());
    const t = 1_700_000_000_000;
    for (let i = 0; i < 40; i++) expect(ours(t)).toBe(theirs(t));
    expect(ours(t + 1)).toBe(theirs(t + 1));
    // Every random digit Z: no next id in that millisecond.
    const full = monotonicUlids(() => 0.999_999);
    const fullTheirs = monotonicFactory(() => 0.999_999);
    expect(full(t)).toBe(fullTheirs(t));
    expect(() => fullTheirs(t)).toThrow();
    expect(() => full(t)).toThrow();
  });

  it("refuses a time ulid cannot encode, as ulid does", () => {
    const ours = monotonicUlids(seeded(3));
    expect(() => ours(2 ** 48)).toThrow();
    expect(() => ours(1.5)).toThrow();
  });

  it("takes the system time for a missing time, and keeps increasing", () => {
    const next = pooledUlids();
    const ids = Array.from({ length: 1000 }, () => next());
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(ids[0]).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });
});
