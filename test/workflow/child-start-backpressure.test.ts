/**
 * @module A step's settlement waits for its child starts in flight (see
 * `StepChildren.seal`), while the step holds its worker slot. The wait
 * must depend on nothing that slot blocks: here the worker has one slot,
 * the child's first step is under the parent's flow rule and key (limit
 * 1, held by the parent's step), and the store stalls the child's commit
 * for a while. The run must still end; a bound of event-loop turns turns
 * a hang into a failure.
 */
import { describe, expect, it } from "vitest";
import { type EnqueueOptions, StepOutcome, type StepRunner } from "taquba";
import { childrenPrefix } from "../../runtime/workflow/records/kv-keys.js";
import { HEADER_RUN_ID } from "../../runtime/workflow/records/reserved.js";
import { settlesWithinTurns, turns } from "../support/turns.js";
import { dec, enc, holdableStore, openEnv } from "./helpers.js";

const CHILD = "p-s0-c";
const FLOW = { rule: "tight", concurrencyKey: "k" } as const;

/** A promise and the function that resolves it. */
function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe("a step's settlement waiting for its child start", () => {
  it("ends the run with the worker's only slot and the flow key held by the step and the store stalled meanwhile", async () => {
    const entered = latch();
    let start: Promise<unknown> | undefined;
    const runner: StepRunner = {
      flowRules: () => ({ tight: { concurrency: { limit: 1 } } }),
      async runStep(s) {
        if (dec(s.payload) === "child") return StepOutcome.succeed(enc("the child's result"));
        // Not awaited: the step returns while its child's submission is at its commit.
        start = s.children.start({ input: enc("child"), key: "c", options: { flow: FLOW } }).catch((e: unknown) => e);
        await entered.promise;
        return StepOutcome.fail("the parent gives up");
      },
    };
    const store = holdableStore();
    const env = await openEnv(runner, { store, configure: (b) => b.maxConcurrentSteps(1) });
    // At the child's commit: the store stalls its write-ahead log from now on.
    const enqueueIfUnchanged = env.queue.enqueueIfUnchanged.bind(env.queue);
    env.queue.enqueueIfUnchanged = async (name: string, payload: Uint8Array, opts: EnqueueOptions, effects, unchanged) => {
      if (opts.headers?.[HEADER_RUN_ID] === CHILD) {
        store.hold();
        entered.open();
      }
      return enqueueIfUnchanged(name, payload, opts, effects, unchanged);
    };
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent"), options: { flow: FLOW } });
      await entered.promise;
      const ended = env.runtime.wait("p");
      // Stalled: the settlement waits for the child's commit, the run cannot end yet.
      expect(await settlesWithinTurns(ended, 50)).toBe(false);
      expect(store.held).toBeGreaterThan(0);
      store.release();
      // The store answers again: nothing else stands between the child's commit and the run's end.
      expect(await settlesWithinTurns(ended, 5_000)).toBe(true);
      expect((await ended).termination.status).toBe("failed");
      expect(await settlesWithinTurns(start!, 50)).toBe(true);
      expect(await start).toMatchObject({ runId: CHILD, newlyStarted: true });
      // The child landed before the end: the end's sweep found it and cancelled it, or it ended first.
      const childEnd = env.runtime.wait(CHILD);
      expect(await settlesWithinTurns(childEnd, 5_000)).toBe(true);
      await turns(50);
      expect((await env.queue.kvScan(childrenPrefix("workflow-steps", "p"))).entries).toEqual([]);
    } finally {
      store.release();
      // A step stuck in its settlement would hold the worker's shutdown too: bounded, so the failure above is reported.
      expect(await settlesWithinTurns(env.stop(), 5_000)).toBe(true);
    }
  });
});
