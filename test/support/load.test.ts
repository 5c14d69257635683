/**
 * @module A test's limit stretched by the load is read while the test runs:
 * a body within it resolves with its value, one past it fails naming the
 * limit, and a load that rises during the run raises the limit. A
 * scenario's wait is its quiet bound on a quiet machine, up to twice that.
 */
import { describe, expect, it } from "vitest";
import { loadLimitTimeout, waitBound, withinLoadLimit } from "./load.js";

const MS = 10;
const EVERY = 5;

/** A body that resolves once `factor` was read `n` times (by the limit's checks): the run lasts n checks, whatever the machine's speed. */
function afterReads(n: number, factor: (read: number) => number): { factor: () => number; body: () => Promise<void> } {
  let reads = 0;
  let done: (() => void) | undefined;
  const finished = new Promise<void>((r) => (done = r));
  return {
    factor: () => {
      if (++reads >= n) done!();
      return factor(reads);
    },
    body: () => finished,
  };
}

describe("withinLoadLimit", () => {
  it("resolves with the body's value within the limit", async () => {
    await expect(
      withinLoadLimit(
        MS,
        async () => "done",
        () => 2,
        EVERY,
      ),
    ).resolves.toBe("done");
  });

  it("rejects once the time since the start passed the limit read from the load", async () => {
    const start = Date.now();
    const never = new Promise<never>(() => undefined);
    await expect(
      withinLoadLimit(
        MS,
        () => never,
        () => 2,
        EVERY,
      ),
    ).rejects.toThrow(/past its limit of 20 ms \(10 ms stretched 2\.00 times/);
    expect(Date.now() - start).toBeGreaterThanOrEqual(2 * MS);
  });

  it("raises the limit when the load rises during the run, and keeps the highest stretch read", async () => {
    // 40 checks of 5 ms: past a limit read once at the start (2 x 10 ms), within the risen one (1000 x 10 ms),
    // which stays although the load read falls back after the third read.
    const rising = afterReads(40, (read) => (read === 2 || read === 3 ? 1_000 : 2));
    await expect(withinLoadLimit(MS, rising.body, rising.factor, EVERY)).resolves.toBeUndefined();
    const flat = afterReads(40, () => 2);
    await expect(withinLoadLimit(MS, flat.body, flat.factor, EVERY)).rejects.toThrow("past its limit of 20 ms");
  });

  it("leaves vitest's own timeout past the largest stretch, so the limit speaks first", () => {
    expect(loadLimitTimeout(MS)).toBeGreaterThan(4 * MS + EVERY);
  });
});

describe("waitBound", () => {
  it("is the quiet bound at the least stretch and twice it at the most", () => {
    expect(waitBound(60_000, () => 2)).toBe(60_000);
    expect(waitBound(60_000, () => 3)).toBe(90_000);
    expect(waitBound(60_000, () => 4)).toBe(120_000);
  });

  it("reads the machine's load when given no factor, within those bounds", () => {
    const bound = waitBound(60_000);
    expect(bound).toBeGreaterThanOrEqual(60_000);
    expect(bound).toBeLessThanOrEqual(120_000);
  });
});
