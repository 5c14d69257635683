/**
 * @module A wait's rounds: a termination this process never announces (one
 * committed by another process) is noticed at the next poll of the wait and
 * not before, and each poll arms the next without piling timers up. A
 * round after a poll that reads the run still active in its turn stays
 * subscribed: the run's announced end wakes the wait at once.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { runEventsFor } from "../../runtime/workflow/runtime-core.js";
import { enc, hangingRunner, openEnv, runnerOf, until } from "./helpers.js";

const POLL_MS = 1_000;

describe("wait rounds", () => {
  it("a termination announced nowhere is noticed at the next poll, and not before", async () => {
    // The first step waits for the clock; the second ends the run.
    const env = await openEnv(
      runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 5 * POLL_MS) : StepOutcome.succeed(enc("done")))),
      { configure: (b) => b.pollIntervalMs(POLL_MS) },
    );
    try {
      // As if another process ended the run: this process announces no termination to its waiters.
      runEventsFor(env.queue).terminated = () => undefined;
      await env.runtime.submit({ input: enc("x"), runId: "quiet" });
      let ended = false;
      const waiting = env.runtime.wait("quiet").then((end) => {
        ended = true;
        return end;
      });
      await until(() => env.clock.pendingTimers >= 2, "the step's delay and the wait's poll armed");
      // Each poll finds the run active and arms the next; the wait's timers do not pile up.
      const armed = env.clock.pendingTimers;
      for (let i = 0; i < 3; i++) {
        env.clock.advance(POLL_MS);
        await until(() => env.clock.pendingTimers === armed, `poll ${i + 1} re-armed`);
      }
      expect(ended).toBe(false);
      // The step's delay passes: the run ends, silently.
      env.clock.advance(2 * POLL_MS);
      await until(async () => (await env.runtime.status("quiet"))?.state === "terminated", "the run ended");
      await new Promise((r) => setTimeout(r, 50));
      expect(ended).toBe(false);
      // The next poll reads it.
      env.clock.advance(POLL_MS);
      const end = await waiting;
      expect(end.termination.status).toBe("succeeded");
      expect(new TextDecoder().decode(end.outcome!.result)).toBe("done");
    } finally {
      await env.stop();
    }
  });

  it("a round after a poll that finds the run still active is woken by the run's end at once, without another poll", async () => {
    let release!: () => void;
    const env = await openEnv(hangingRunner(new Promise<void>((r) => (release = r))), { configure: (b) => b.pollIntervalMs(POLL_MS) });
    try {
      await env.runtime.submit({ input: enc("x"), runId: "held" });
      let ended = false;
      const waiting = env.runtime.wait("held").then((end) => {
        ended = true;
        return end;
      });
      await until(() => env.clock.pendingTimers >= 1, "the wait's poll armed");
      const armed = env.clock.pendingTimers;
      // Polls that find the run active: each later round reads it in its turn and waits again.
      for (let i = 0; i < 2; i++) {
        env.clock.advance(POLL_MS);
        await until(() => env.clock.pendingTimers === armed, `poll ${i + 1} re-armed`);
      }
      expect(ended).toBe(false);
      // The step ends the run; the clock stays where it is, so only the announcement can wake the wait.
      release();
      await until(() => ended, "the wait woken by the run's end");
      const end = await waiting;
      expect(end.termination.status).toBe("succeeded");
      expect(new TextDecoder().decode(end.outcome!.result)).toBe("late");
    } finally {
      await env.stop();
    }
  });
});
