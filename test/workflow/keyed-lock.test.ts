/**
 * @module The runtime's per-key lock (submits of one run id, signal waits of
 * one key): one holder per key at a time, in arrival order, a failed holder
 * releasing the key, a free key's work started in the call, and order kept
 * through a long queue cut from its front while it grows.
 */
import { describe, expect, it } from "vitest";
import { KeyedLock } from "../../runtime/workflow/runs/run-events.js";
import { until } from "./helpers.js";

describe("KeyedLock", () => {
  it("runs the holders of one key one at a time, in arrival order; other keys do not wait", async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const gates: (() => void)[] = [];
    const hold = (name: string) => async () => {
      log.push(`${name} in`);
      await new Promise<void>((r) => gates.push(r));
      log.push(`${name} out`);
      return name;
    };
    const a = lock.run("k", hold("a"));
    const b = lock.run("k", hold("b"));
    const c = lock.run("k", hold("c"));
    const other = lock.run("other", hold("other"));
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(["a in", "other in"]);
    gates.shift()!();
    gates.shift()!();
    expect(await a).toBe("a");
    expect(await other).toBe("other");
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(["a in", "other in", "a out", "other out", "b in"]);
    gates.shift()!();
    expect(await b).toBe("b");
    await new Promise((r) => setImmediate(r));
    gates.shift()!();
    expect(await c).toBe("c");
    expect(log.slice(5)).toEqual(["b out", "c in", "c out"]);
  });

  it("a key handed to a waiter stays held: a caller arriving after the hand-off waits for that waiter, and every waiter of a long queue runs alone", async () => {
    const lock = new KeyedLock();
    const gates = new Map<string, () => void>();
    let inside = 0;
    let most = 0;
    const log: string[] = [];
    const hold = (name: string) => async () => {
      inside++;
      most = Math.max(most, inside);
      log.push(`${name} in`);
      await new Promise<void>((r) => gates.set(name, r));
      inside--;
      log.push(`${name} out`);
    };
    const a = lock.run("k", hold("a"));
    const b = lock.run("k", hold("b"));
    gates.get("a")!();
    await a;
    await until(() => gates.has("b"));
    // `b` holds the key it was handed; `c` comes after the hand-off and must wait for `b`.
    const c = lock.run("k", hold("c"));
    const d = lock.run("k", hold("d"));
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(["a in", "a out", "b in"]);
    gates.get("b")!();
    await b;
    await until(() => gates.has("c"));
    gates.get("c")!();
    await c;
    await until(() => gates.has("d"));
    gates.get("d")!();
    await d;
    expect(log).toEqual(["a in", "a out", "b in", "b out", "c in", "c out", "d in", "d out"]);
    expect(most).toBe(1);
    // Free again once the queue ran out.
    let started = false;
    await lock.run("k", async () => {
      started = true;
    });
    expect(started).toBe(true);
  });

  it("a holder that throws before returning a promise releases the key to the next", async () => {
    const lock = new KeyedLock();
    const thrown = lock.run("k", () => {
      throw new Error("threw at once");
    });
    await expect(thrown).rejects.toThrow("threw at once");
    const first = lock.run("k", async () => "held");
    let second = false;
    const next = lock.run("k", async () => {
      second = true;
    });
    expect(second).toBe(false);
    expect(await first).toBe("held");
    await next;
    expect(second).toBe(true);
  });

  it("a holder that fails releases the key to the next", async () => {
    const lock = new KeyedLock();
    const failed = lock.run("k", async () => {
      await Promise.resolve();
      throw new Error("first failed");
    });
    const next = lock.run("k", async () => "second ran");
    await expect(failed).rejects.toThrow("first failed");
    expect(await next).toBe("second ran");
    // The key is free again: a later holder starts in its call.
    let started = false;
    const later = lock.run("k", async () => {
      started = true;
    });
    expect(started).toBe(true);
    await later;
  });

  it("a free key's holder starts in the call, before the caller's next line", async () => {
    const lock = new KeyedLock();
    let started = false;
    const p = lock.run("free", async () => {
      started = true;
    });
    expect(started).toBe(true);
    await p;
    // Held: the next holder of that key waits for the first to end.
    let release!: () => void;
    const first = lock.run("busy", () => new Promise<void>((r) => (release = r)));
    let second = false;
    const after = lock.run("busy", async () => {
      second = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(second).toBe(false);
    release();
    await first;
    await after;
    expect(second).toBe(true);
  });

  it("keeps arrival order and one holder at a time across thousands of waiters, callers arriving while the key is handed on", async () => {
    const lock = new KeyedLock();
    const order: number[] = [];
    let inside = 0;
    let most = 0;
    const runs: Promise<void>[] = [];
    let arrived = 0;
    const arrive = (): void => {
      const n = arrived++;
      runs.push(
        lock.run("k", async () => {
          inside++;
          most = Math.max(most, inside);
          order.push(n);
          // Every third holder lets two more callers arrive while it holds the key: the queue is cut from the front while it grows at the back.
          if (n % 3 === 0 && arrived < 6_000) {
            arrive();
            arrive();
          }
          await Promise.resolve();
          inside--;
        }),
      );
    };
    for (let i = 0; i < 2_500; i++) arrive();
    while (order.length < arrived) await Promise.all(runs.slice());
    expect(arrived).toBeGreaterThan(4_000);
    expect(order).toEqual(Array.from({ length: arrived }, (_, i) => i));
    expect(most).toBe(1);
    // The queue ran out: the key is free, its next holder starts in the call.
    let started = false;
    const later = lock.run("k", async () => {
      started = true;
    });
    expect(started).toBe(true);
    await later;
  });
});
