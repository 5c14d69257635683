/**
 * @module What a caller sees after `wait` returned while the terminating
 * settlement's own call had not returned yet. `wait` answers once the
 * termination is durable; the settlement tells this process about the end
 * (waiters woken, the memo sweeper's earliest expiry lowered) only when its
 * call returns, which can be some turns later. Reads answer from the store
 * and agree with `wait` at once; an explicit `sweepMemos` must clear the
 * run once its retention ran out, not skip it on a stale earliest expiry.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type Queue } from "taquba";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

const RETENTION = 60_000;

/** Holds every `ack` call's answer (not its commit) until `release`, while `held` is set. */
function heldAcks(): { wrap: (queue: Queue) => Queue; held: boolean; release(): void } {
  let waiting: (() => void)[] = [];
  const h = {
    held: false,
    release() {
      const w = waiting;
      waiting = [];
      for (const r of w) r();
    },
    wrap(queue: Queue): Queue {
      const q = queue as unknown as { ack: (...args: unknown[]) => Promise<unknown> };
      const ack = q.ack.bind(queue);
      q.ack = async (...args) => {
        const out = await ack(...args);
        if (h.held) await new Promise<void>((r) => waiting.push(r));
        return out;
      };
      return queue;
    },
  };
  return h;
}

describe("after a wait that returned before the terminating settlement's call", () => {
  it("status, outcome and the run's history agree with the wait, and sweepMemos clears the run once expired", async () => {
    const acks = heldAcks();
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { wrapQueue: acks.wrap, configure: (b) => b.memoRetention(RETENTION).pollIntervalMs(3_600_000) },
    );
    try {
      // A pass with no marker: the sweeper knows of none due.
      expect(await env.runtime.sweepMemos()).toBe(0);
      acks.held = true;
      await env.runtime.submit({ runId: "r", input: enc("x") });
      await until(async () => (await env.runtime.status("r"))?.state === "terminated", "the run's end");
      const end = await env.runtime.wait("r");
      expect(end.termination.status).toBe("succeeded");
      expect(await env.runtime.status("r")).toMatchObject({ state: "terminated", status: "succeeded" });
      expect(await env.runtime.outcome("r")).toEqual(end.outcome);
      expect((await env.runtime.inspectRun("r"))?.end).toMatchObject({ status: "succeeded", finalStep: 0 });
      // Not yet expired: kept.
      env.clock.advance(RETENTION - 1);
      expect(await env.runtime.sweepMemos()).toBe(0);
      expect(await env.runtime.status("r")).toMatchObject({ state: "terminated" });
      env.clock.advance(2);
      expect(await env.runtime.sweepMemos()).toBe(1);
      expect(await env.runtime.status("r")).toBeNull();
      expect(await env.runtime.sweepMemos()).toBe(0);
    } finally {
      acks.held = false;
      acks.release();
      await env.stop();
    }
  });
});
