/**
 * @module A run id submitted again after its run ended does not inherit the
 * earlier run's signal state: the signal the earlier run consumed, the
 * timeout it met, or the scheduled wake of a wait it was cancelled in.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { advanceUntil, dec, enc, openEnv, runnerOf, settle, until } from "./helpers.js";

/** Step 0 waits on `sig-{runId}` for a minute; step 1 ends the run with what it met. */
const waiter = () =>
  runnerOf(async (s) => {
    if (s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, `sig-${s.runId}`, 60_000);
    return StepOutcome.succeed(enc(s.signal === null ? "timed out" : s.signal === undefined ? "no signal" : dec(s.signal)));
  });

/** Whether run `runId` waits at step 1 (step 0 settled, nothing consumed yet). */
async function waitsAtStep1(env: Awaited<ReturnType<typeof openEnv>>, runId: string): Promise<boolean> {
  const s = await env.runtime.status(runId);
  return s !== null && s.state !== "terminated" && s.state !== "cancelling" && s.step === 1;
}

describe("a run id submitted again after its run ended, over the earlier run's signals", () => {
  it("waits for a signal of its own after the earlier run consumed one", async () => {
    const env = await openEnv(waiter());
    try {
      await env.runtime.submit({ runId: "a", input: enc("x") });
      await until(() => waitsAtStep1(env, "a"), "the first wait");
      expect(await env.runtime.signal("sig-a", enc("first"))).toBe("delivered");
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("first");
      await env.runtime.submit({ runId: "a", input: enc("x") });
      await until(() => waitsAtStep1(env, "a"), "the second wait");
      expect(await env.runtime.signal("sig-a", enc("second"))).toBe("delivered");
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("second");
    } finally {
      await env.stop();
    }
  });

  it("waits for a signal of its own after the earlier run's wait timed out", async () => {
    const env = await openEnv(waiter());
    try {
      await env.runtime.submit({ runId: "t", input: enc("x") });
      await until(() => waitsAtStep1(env, "t"), "the first wait");
      await advanceUntil(env.clock, env.clock.now() + 120_000, async () => (await env.runtime.status("t"))?.state === "terminated", "the timeout");
      expect(dec((await env.runtime.outcome("t"))!.result)).toBe("timed out");
      await env.runtime.submit({ runId: "t", input: enc("x") });
      await until(() => waitsAtStep1(env, "t"), "the second wait");
      expect(await env.runtime.signal("sig-t", enc("second"))).toBe("delivered");
      expect(dec((await env.runtime.wait("t")).outcome!.result)).toBe("second");
    } finally {
      await env.stop();
    }
  });

  it("is not woken by the scheduled timeout of a wait the earlier run was cancelled in", async () => {
    const env = await openEnv(waiter());
    try {
      await env.runtime.submit({ runId: "c", input: enc("x") });
      await until(() => waitsAtStep1(env, "c"), "the first wait");
      await env.runtime.cancel("c");
      expect((await env.runtime.wait("c")).outcome!.status).toBe("cancelled");
      // Half the earlier wait's timeout gone: it would fire while the new run waits.
      env.clock.advance(30_000);
      await env.runtime.submit({ runId: "c", input: enc("x") });
      await until(() => waitsAtStep1(env, "c"), "the second wait");
      // Past the earlier wait's timeout, not the new one's: a wake of the earlier wait would end the run as timed out.
      env.clock.advance(45_000);
      await settle(50);
      expect(await waitsAtStep1(env, "c")).toBe(true);
      expect(await env.runtime.signal("sig-c", enc("second"))).toBe("delivered");
      expect(dec((await env.runtime.wait("c")).outcome!.result)).toBe("second");
    } finally {
      await env.stop();
    }
  });
});
