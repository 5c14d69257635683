/**
 * @module A signal that arrives once a wait's timeout has promoted the
 * waiting step, before the step is claimed, is consumed by that step: its
 * consumption and the buffer's removal commit together, and the step queue
 * counts one done job per step, as for a signal that woke its waiter. A
 * clear of the buffer between the step's read and that commit leaves the
 * step reading its timeout.
 */
import { describe, expect, it } from "vitest";
import type { Queue, SettlementEffects } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";
import { HOUR, promotedWaiter, signalWaitRunner as runner } from "./fixtures/promoted-signal-waiter.js";

describe("a signal sent after the timeout promoted its waiter", () => {
  it("reaches the step, and the step queue counts one done job per step (no extra job)", async () => {
    // Run "a"'s wait timed out; the signal "P" sent then is buffered.
    const { store, clock } = await promotedWaiter(true);

    const env3 = await openEnv(runner, { store, clock });
    expect(dec((await env3.runtime.wait("a")).outcome!.result)).toBe("P");
    // The buffer is gone with the consumption: a later waiter on the key times out.
    await env3.runtime.submit({ input: enc("k"), runId: "b" });
    await until(async () => (await env3.runtime.status("b"))?.step === 1, "b waiting");
    clock.advance(HOUR);
    expect(dec((await env3.runtime.wait("b")).outcome!.result)).toBe("timeout");
    await until(async () => (await env3.queue.view().stats("workflow-steps")).done >= 4, "both runs' steps acked");
    await env3.stop();

    // Two runs of two steps each: four step jobs, each done once, nothing else.
    const env4 = await openEnv(runner, { store, clock, start: false });
    expect(await env4.queue.view().stats("workflow-steps")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: 4, dead: 0 });
    await env4.stop();
  });

  it("a clear of the buffer between the step's read and its commit: the step reads the timeout, and nothing stays buffered", async () => {
    const { store, clock } = await promotedWaiter(true);

    // The step's first commit compared on the buffer finds it cleared (as `clearSignal`, outside the key's lock, may).
    let cleared = 0;
    let runtime: Awaited<ReturnType<typeof openEnv>>["runtime"] | undefined;
    const clearingFirst = (queue: Queue): Queue =>
      new Proxy(queue, {
        get(target, name) {
          if (name === "kvCompareAndApply")
            return async (expected: Parameters<Queue["kvCompareAndApply"]>[0], effects: SettlementEffects) => {
              if (cleared === 0 && expected.some((e) => e.key.includes("signal-buf/"))) {
                cleared++;
                expect(await runtime!.clearSignal("k")).toBe(true);
              }
              return target.kvCompareAndApply(expected, effects);
            };
          const v = Reflect.get(target, name, target) as unknown;
          return typeof v === "function" ? v.bind(target) : v;
        },
      });
    const env3 = await openEnv(runner, { store, clock, wrapQueue: clearingFirst });
    runtime = env3.runtime;
    expect(dec((await env3.runtime.wait("a")).outcome!.result)).toBe("timeout");
    expect(cleared).toBe(1);
    expect(await env3.runtime.clearSignal("k")).toBe(false);
    await until(async () => (await env3.queue.view().stats("workflow-steps")).done >= 2, "a's steps acked");
    expect(await env3.queue.view().stats("workflow-steps")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: 2, dead: 0 });
    await env3.stop();
  });
});
