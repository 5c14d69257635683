import { describe, expect, it } from "vitest";
import { MockClock, SystemClock } from "taquba";

describe("MockClock", () => {
  it("wakes waiters in deadline order only when advanced past their deadline", async () => {
    const clock = new MockClock(1_000);
    const woken: string[] = [];
    const a = clock.waitUntil(1_500).then(() => woken.push("a"));
    const b = clock.waitUntil(1_200).then(() => woken.push("b"));
    clock.advance(100);
    await Promise.resolve();
    expect(woken).toEqual([]);
    expect(clock.pendingTimers).toBe(2);
    expect(clock.nextDeadline).toBe(1_200);
    clock.advance(400);
    await Promise.all([a, b]);
    expect(woken).toEqual(["b", "a"]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("resolves at once for a deadline already passed", async () => {
    const clock = new MockClock(5_000);
    await expect(clock.waitUntil(5_000)).resolves.toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });

  it("rejects and forgets a wait whose signal aborts", async () => {
    const clock = new MockClock(0);
    const ac = new AbortController();
    const wait = clock.waitUntil(10, ac.signal);
    ac.abort(new Error("stop"));
    await expect(wait).rejects.toThrow("stop");
    expect(clock.pendingTimers).toBe(0);
    await expect(clock.waitUntil(10, ac.signal)).rejects.toThrow("stop");
  });

  it("refuses to move backwards through advance", () => {
    const clock = new MockClock(0);
    expect(() => clock.advance(-1)).toThrow(RangeError);
    clock.set(-5);
    expect(clock.now()).toBe(-5);
  });
});

describe("SystemClock", () => {
  it("waits for a real deadline and can be aborted", async () => {
    const start = Date.now();
    await SystemClock.waitUntil(start + 20);
    expect(Date.now()).toBeGreaterThanOrEqual(start + 20);
    const ac = new AbortController();
    const wait = SystemClock.waitUntil(Date.now() + 60_000, ac.signal);
    ac.abort(new Error("bye"));
    await expect(wait).rejects.toThrow("bye");
  });
});
