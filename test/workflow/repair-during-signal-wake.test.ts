/**
 * @module A run removed (or repaired) while its step, woken by its signal
 * wait's timeout, is resolving what it observes: the repair's end deletes
 * the step's signal records, so the step must not write them again after
 * that end. A buffered signal it would have consumed stays buffered for the
 * next waiter (not lost to an ended run), no signal record of the removed
 * run is left behind, and a later run under the same id that times out at
 * the same step reads its timeout, not the old run's signal.
 */
import { describe, expect, it } from "vitest";
import type { MemoryStore, MockClock, Queue } from "taquba";
import { SIGNAL_DELIVERED_PREFIX, SIGNAL_TIMED_OUT_PREFIX, signalTimedOutKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, type Env, openEnv, until } from "./helpers.js";
import { keysOf } from "./run-records.js";
import { HOUR, promotedWaiter, signalWaitRunner as runner } from "./fixtures/promoted-signal-waiter.js";

const Q = "workflow-steps";

/** The queue, with `act` run once, awaited, when the woken step of run "a" first reads whether it timed out. */
function actingAtTimeoutRead(act: () => Promise<void>): (queue: Queue) => Queue {
  let done = false;
  const key = signalTimedOutKey(Q, "a", 1);
  return (queue) =>
    new Proxy(queue, {
      get(target, name) {
        if (name === "kvGet")
          return async (k: string) => {
            if (!done && k === key) {
              done = true;
              await act();
            }
            return target.kvGet(k);
          };
        const v = Reflect.get(target, name, target) as unknown;
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
}

/** Every signal record (delivered or timed out) kept for run `runId`. */
async function signalRecordsOf(env: Env, runId: string): Promise<string[]> {
  const out: string[] = [];
  for (const prefix of [SIGNAL_DELIVERED_PREFIX, SIGNAL_TIMED_OUT_PREFIX]) {
    const page = await env.queue.kvScan(`${prefix}${Q}/${runId}/`, { limit: 100 });
    out.push(...page.entries.map((e) => e.key));
  }
  return out;
}

/**
 * A life on `store` in which run "a" is removed (its active step ended) when
 * its woken step first reads whether it timed out; returns once the removal
 * and that step settled, with the removal's report.
 */
async function removedAtTimeoutRead(store: MemoryStore, clock: MockClock): Promise<{ env: Env; removed: unknown }> {
  let removed: unknown;
  const env: Env = await openEnv(runner, {
    store,
    clock,
    wrapQueue: actingAtTimeoutRead(async () => {
      removed = await env.runtime.repairRun("a", { remove: true, endActive: true });
    }),
  });
  try {
    await until(async () => removed !== undefined && (await env.queue.view().stats(Q)).claimed === 0, "the removal and the woken step settled");
  } catch (e) {
    await env.stop();
    throw e;
  }
  return { env, removed };
}

describe("a run removed while its woken step resolves its signal", () => {
  it("leaves the buffered signal for the next waiter, no signal record, and a new run under the id reads its own timeout", async () => {
    const { store, clock } = await promotedWaiter(true);
    const { env, removed } = await removedAtTimeoutRead(store, clock);
    try {
      expect(removed).toMatchObject({ action: "removed" });
      expect(await env.runtime.status("a")).toBeNull();
      expect(await keysOf(env, "a")).toEqual([]);
      expect(await signalRecordsOf(env, "a")).toEqual([]);

      // The signal no ended run observed is still there for the key's next waiter.
      await env.runtime.submit({ input: enc("k"), runId: "b" });
      expect(dec((await env.runtime.wait("b")).outcome!.result)).toBe("P");

      // A new run under the removed run's id, timing out at the same step, observes its timeout.
      await env.runtime.submit({ input: enc("k2"), runId: "a" });
      await until(async () => (await env.runtime.status("a"))?.step === 1, "the new a waiting");
      clock.advance(HOUR);
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("timeout");
    } finally {
      await env.stop();
    }
  });

  it("with no signal buffered, leaves no timed-out record of the removed run", async () => {
    const { store, clock } = await promotedWaiter(false);
    const { env } = await removedAtTimeoutRead(store, clock);
    try {
      expect(await keysOf(env, "a")).toEqual([]);
      expect(await signalRecordsOf(env, "a")).toEqual([]);
      // A signal sent now is buffered for the next waiter: no ended run takes it.
      expect(await env.runtime.signal("k", enc("Q"))).toBe("buffered");
      await env.runtime.submit({ input: enc("k"), runId: "c" });
      expect(dec((await env.runtime.wait("c")).outcome!.result)).toBe("Q");
    } finally {
      await env.stop();
    }
  });
});
