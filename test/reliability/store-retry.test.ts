/**
 * @module One retry policy for store calls on the engine path: every call
 * the engine makes, checkpoint deletions included, goes through the same
 * backoff loop as S3Store's requests (runtime/store/retry.ts). Before, a
 * checkpoint's deletions were tried once and a transient failure left the
 * covered WAL behind.
 */
import { describe, expect, it, vi } from "vitest";
import { Engine, MemoryStore, WriteBatch, withFaults } from "taquba";
import { keysUnder, RETRY, useBackends } from "./backends.js";
import { backoffDelay, retryWithBackoff } from "../../runtime/store/retry.js";

const enc = new TextEncoder();
const backends = useBackends();

describe("the backoff between attempts", () => {
  it("waits at most what a timer holds (24.8 days): a longer policy does not turn into a retry 1 ms later", () => {
    for (const n of [2, 3, 40]) {
      for (let i = 0; i < 20; i++) {
        const d = backoffDelay({ attempts: 50, baseDelayMs: 2 ** 40, maxDelayMs: 2 ** 45 }, n);
        expect(d).toBeLessThanOrEqual(2 ** 31 - 1);
        expect(d).toBeGreaterThanOrEqual((2 ** 31 - 1) / 2);
      }
    }
    // Policies within the bound are as before.
    expect(backoffDelay({ attempts: 3, baseDelayMs: 0, maxDelayMs: 1000 }, 2)).toBe(0);
    const d = backoffDelay({ attempts: 3, baseDelayMs: 100, maxDelayMs: 1000 }, 3);
    expect(d >= 100 && d <= 200).toBe(true);
  });

  it("a policy of more than 1,025 attempts without delays keeps retrying at once: its later waits are 0 ms, not NaN (a wait that can stop then never ended)", async () => {
    // 2 ** 1024 is Infinity, and 0 * Infinity is NaN.
    for (const n of [1025, 1026, 1100, 5000]) expect(backoffDelay({ attempts: 5000, baseDelayMs: 0, maxDelayMs: 1000 }, n)).toBe(0);
    const d = backoffDelay({ attempts: 5000, baseDelayMs: 1e-300, maxDelayMs: 1000 }, 5000);
    expect(d >= 500 && d <= 1000).toBe(true);
    let calls = 0;
    const done = retryWithBackoff(
      { attempts: 1100, baseDelayMs: 0, maxDelayMs: 0 },
      () => true,
      async () => {
        if (++calls < 1100) throw new Error("transient");
        return "last attempt";
      },
      () => false,
    );
    const watchdog = new Promise((r) => setTimeout(() => r(`still waiting after 5 s, at attempt ${calls}`), 5000));
    expect(await Promise.race([done, watchdog])).toBe("last attempt");
  });

  it("a wall clock set back during a wait that can stop (a checkpoint's) does not stretch the wait by the jump", async () => {
    // Real timers: the loop sleeps with setTimeout. Date.now is moved back an hour while it waits.
    const realNow = Date.now.bind(Date);
    let back = 0;
    const spy = vi.spyOn(Date, "now").mockImplementation(() => realNow() - back);
    try {
      let calls = 0;
      const done = retryWithBackoff(
        { attempts: 2, baseDelayMs: 200, maxDelayMs: 200 },
        () => true,
        async () => {
          if (++calls > 1) return "second attempt";
          setTimeout(() => (back = 3_600_000), 20);
          throw new Error("transient");
        },
        () => false,
      );
      // The wait is 100 to 200 ms; stretched by the jump it would be an hour.
      const watchdog = new Promise((r) => setTimeout(r, 5000, "still waiting after 5 s"));
      expect(await Promise.race([done, watchdog])).toBe("second attempt");
    } finally {
      spy.mockRestore();
    }
  });
});

describe("store calls on the engine path", () => {
  it("a checkpoint's deletions are retried: transient delete failures leave no covered WAL object behind", async () => {
    const raw = new MemoryStore();
    const store = withFaults(raw, { failureRate: 0, seed: 7, ops: ["delete"] });
    const engine = await Engine.open(store, { flushIntervalMs: 0, checkpointWalObjects: 0, retry: RETRY });
    for (let i = 0; i < 20; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc.encode(String(i))));
    store.failureRate = 0.5;
    await engine.checkpoint();
    store.failureRate = 0;
    expect(store.injected).toBeGreaterThan(0);
    // Only the fence at sequence 1 stays: fences are never deleted.
    expect(await keysUnder(raw, "wal/")).toEqual([`wal/${"1".padStart(20, "0")}`]);
    await engine.close();
  });

  it.each(backends)("commits, checkpoints and reopens through transient faults on $name", async (backend) => {
    const { store } = await backend.make();
    const engine = await Engine.open(store, { flushIntervalMs: 0, checkpointWalObjects: 3, retry: RETRY });
    for (let i = 0; i < 8; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc.encode(String(i))));
    await engine.close();
    const reopened = await Engine.open(store, { retry: RETRY });
    expect([...reopened.scan()]).toHaveLength(8);
    await reopened.close();
  });
});
