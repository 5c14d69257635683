/**
 * @module A removal (`repairRun(id, { remove: true })`) of an ended run
 * racing what brings a run under its id back to life: it reads the records
 * first and clears the memo later, in turns with submissions and retries of
 * the id. A retry (which keeps the run's memo) or a new submission that
 * lands between the two must keep its memo: the removal then finds the run
 * active and refuses, and the run's memoized computations are not run a
 * second time.
 */
import { describe, expect, it } from "vitest";
import { RunNotDamagedError, StepOutcome, type Queue, type RunEnd, type Step } from "taquba";
import { runHistoryPrefix } from "../../runtime/workflow/runs/history-records.js";
import { dec, enc, type Env, openEnv, runnerOf, until } from "./helpers.js";
import { gate } from "../support/gate.js";

const Q = "workflow-steps";

/** The queue, with `act` run once, awaited, when the removal `armed` says is under way counts run "r"'s history. */
function actingAtHistoryCount(armed: () => boolean, act: () => Promise<void>): (queue: Queue) => Queue {
  let done = false;
  const prefix = runHistoryPrefix(Q, "r");
  return (queue) =>
    new Proxy(queue, {
      get(target, name) {
        if (name === "kvScan")
          return async (p: string, o: Parameters<Queue["kvScan"]>[1]) => {
            if (!done && armed() && p === prefix) {
              done = true;
              await act();
            }
            return target.kvScan(p, o);
          };
        const v = Reflect.get(target, name, target) as unknown;
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
}

/**
 * Step 0 computes "v" into the run memo; step 1 fails the first time it
 * runs, and later waits for `held` and reads "v" back (computing it again
 * if it is gone), succeeding with it.
 */
function memoRunner(counts: { computed: number; step1: number }, held: Promise<void>) {
  return runnerOf(async (s: Step) => {
    if (s.stepNumber === 0) {
      await s.runMemo.memoized("v", async () => `v${++counts.computed}`);
      return StepOutcome.continueNow(enc("1"));
    }
    if (++counts.step1 === 1) return StepOutcome.fail("first time");
    await held;
    return StepOutcome.succeed(enc(await s.runMemo.memoized("v", async () => `v${++counts.computed}`)));
  });
}

/** Asks for run "r"'s removal, which finds the run active and refuses; then opens `held` and returns the run's end. */
async function refusedRemovalThenEnd(env: Env, held: { open(): void }): Promise<RunEnd> {
  const removal = await env.runtime.repairRun("r", { remove: true }).catch((e: unknown) => e);
  expect(removal).toBeInstanceOf(RunNotDamagedError);
  expect(removal).toMatchObject({ reason: "active_kept" });
  held.open();
  return env.runtime.wait("r");
}

describe("a removal racing the run's return under its id", () => {
  it("a retry between the removal's read and its memo clearing keeps the run's memo", async () => {
    const counts = { computed: 0, step1: 0 };
    const held = gate();
    let armed = false;
    let env: Env | undefined;
    env = await openEnv(memoRunner(counts, held.opened), {
      wrapQueue: actingAtHistoryCount(
        () => armed,
        async () => {
          await env!.runtime.retryRun("r");
        },
      ),
    });
    try {
      await env.runtime.submit({ runId: "r", input: enc("0") });
      expect((await env.runtime.wait("r")).termination.status).toBe("failed");
      expect(counts.computed).toBe(1);

      armed = true;
      // The retried run is active: not removed.
      const end = await refusedRemovalThenEnd(env, held);
      expect(end.termination.status).toBe("succeeded");
      // The memo the retry kept: the value computed once, not again.
      expect(dec(end.outcome!.result)).toBe("v1");
      expect(counts.computed).toBe(1);
    } finally {
      held.open();
      await env.stop();
    }
  });

  it("a new submission between the removal's read and its memo clearing keeps its memo", async () => {
    const counts = { computed: 0 };
    const held = gate();
    let armed = false;
    let env: Env | undefined;
    // The new run's step 1 waits until the removal is over, then reads what its step 0 stored.
    const runner = runnerOf(async (s: Step) => {
      const v = await s.runMemo.memoized("v", async () => `v${++counts.computed}`);
      if (s.stepNumber === 0) return StepOutcome.continueNow(enc("1"));
      if (armed) await held.opened;
      return StepOutcome.succeed(enc(`${v}:${await s.runMemo.memoized("v", async () => `v${++counts.computed}`)}`));
    });
    env = await openEnv(runner, {
      wrapQueue: actingAtHistoryCount(
        () => armed,
        async () => {
          await env!.runtime.submit({ runId: "r", input: enc("0") });
          await until(() => counts.computed === 2, "the new run's step 0 stored its value");
        },
      ),
    });
    try {
      await env.runtime.submit({ runId: "r", input: enc("0") });
      expect(dec((await env.runtime.wait("r")).outcome!.result)).toBe("v1:v1");
      expect(counts.computed).toBe(1);

      armed = true;
      const end = await refusedRemovalThenEnd(env, held);
      expect(dec(end.outcome!.result)).toBe("v2:v2");
      expect(counts.computed).toBe(2);
    } finally {
      held.open();
      await env.stop();
    }
  });
});
