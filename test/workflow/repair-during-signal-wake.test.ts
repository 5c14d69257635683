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
import { MemoryStore, MockClock, StepOutcome, type Queue, type Step, type StepRunner } from "taquba";
import { SIGNAL_DELIVERED_PREFIX, SIGNAL_TIMED_OUT_PREFIX, signalTimedOutKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, type Env, openEnv, until } from "./helpers.js";
import { keysOf } from "./run-records.js";

const HOUR = 3_600_000;
const Q = "workflow-steps";

/** Step 0 waits on the key in its payload; step 1 succeeds with the signal it observed. */
const runner: StepRunner = {
  async runStep(s: Step) {
    if (s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, dec(s.payload), HOUR);
    return StepOutcome.succeed(s.signal == null ? enc("timeout") : s.signal);
  },
};

/** Run "a" waits on key "k" until its timeout promotes the waiting step; with `signal`, a signal sent then is buffered. */
async function promotedWaiter(signal: boolean): Promise<{ store: MemoryStore; clock: MockClock }> {
  const store = new MemoryStore();
  const clock = new MockClock();
  const env1 = await openEnv(runner, { store, clock });
  await env1.runtime.submit({ input: enc("k"), runId: "a" });
  await until(async () => (await env1.runtime.status("a"))?.step === 1, "a waiting");
  await env1.stop();
  const env2 = await openEnv(runner, { store, clock, start: false });
  clock.advance(HOUR);
  await env2.queue.runMaintenance();
  if (signal) expect(await env2.runtime.signal("k", enc("P"))).toBe("buffered");
  await env2.stop();
  return { store, clock };
}

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

describe("a run removed while its woken step resolves its signal", () => {
  it("leaves the buffered signal for the next waiter, no signal record, and a new run under the id reads its own timeout", async () => {
    const { store, clock } = await promotedWaiter(true);
    let env: Env | undefined;
    let removed: unknown;
    env = await openEnv(runner, {
      store,
      clock,
      wrapQueue: actingAtTimeoutRead(async () => {
        removed = await env!.runtime.repairRun("a", { remove: true, endActive: true });
      }),
    });
    try {
      await until(async () => removed !== undefined && (await env!.queue.view().stats(Q)).claimed === 0, "the removal and the woken step settled");
      expect(removed).toMatchObject({ action: "removed" });
      expect(await env.runtime.status("a")).toBeNull();
      expect(await keysOf(env, "a")).toEqual([]);
      expect(await signalRecordsOf(env, "a")).toEqual([]);

      // The signal no ended run observed is still there for the key's next waiter.
      await env.runtime.submit({ input: enc("k"), runId: "b" });
      expect(dec((await env.runtime.wait("b")).outcome!.result)).toBe("P");

      // A new run under the removed run's id, timing out at the same step, observes its timeout.
      await env.runtime.submit({ input: enc("k2"), runId: "a" });
      await until(async () => (await env!.runtime.status("a"))?.step === 1, "the new a waiting");
      clock.advance(HOUR);
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("timeout");
    } finally {
      await env.stop();
    }
  });

  it("with no signal buffered, leaves no timed-out record of the removed run", async () => {
    const { store, clock } = await promotedWaiter(false);
    let env: Env | undefined;
    let removed: unknown;
    env = await openEnv(runner, {
      store,
      clock,
      wrapQueue: actingAtTimeoutRead(async () => {
        removed = await env!.runtime.repairRun("a", { remove: true, endActive: true });
      }),
    });
    try {
      await until(async () => removed !== undefined && (await env!.queue.view().stats(Q)).claimed === 0, "the removal and the woken step settled");
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
