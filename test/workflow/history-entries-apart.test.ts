/**
 * @module Each settled step's history entry holds what that step did and
 * nothing of the step settled before it: a failed attempt's error and
 * stack, a step's KV effects and memo keys, a kept payload, a signal or a
 * transition do not carry over to the next entry written, whichever run it
 * belongs to and in whatever order steps of different shapes settle.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv } from "./helpers.js";

/** Runs by what their input says: "fail" dead-letters at once, "kv" stages a put and a memo then continues at once, anything else succeeds. */
const runner: StepRunner = {
  async runStep(step) {
    const what = dec(step.payload);
    if (what === "fail") throw StepError.permanent(new Error("boom at the first step"));
    if (what === "kv") {
      step.effects.put(`k-${step.runId}`, enc("v"));
      await step.memo.put("m", enc("memo"));
      return StepOutcome.continueNow(enc("plain"));
    }
    return StepOutcome.succeed(enc("done"));
  },
};

describe("step history entries written one after another", () => {
  it("hold only their own step's error, effects, memo keys, payload and transition", async () => {
    const env = await openEnv(runner);
    try {
      // One after another, so each entry is written right after one of another shape.
      for (const [runId, input] of [
        ["failed", "fail"],
        ["plain", "plain"],
        ["kv", "kv"],
        ["failed-again", "fail"],
        ["plain-again", "plain"],
      ] as const) {
        await env.runtime.submit({ input: enc(input), runId });
        await env.runtime.wait(runId);
      }
      const steps = async (runId: string) => (await env.runtime.inspectRun(runId))!.steps;

      for (const runId of ["failed", "failed-again"]) {
        const [s0] = await steps(runId);
        expect(s0!.attempts).toHaveLength(1);
        expect(s0!.attempts[0]!.outcome).toBe("dead_lettered");
        expect(s0!.attempts[0]!.error).toContain("boom at the first step");
        expect(s0!.attempts[0]!.stack).toContain("boom at the first step");
        expect(s0!).toMatchObject({ kvPuts: [], memoKeys: [] });
        expect(s0!.transition).toBeUndefined();
      }
      for (const runId of ["plain", "plain-again"]) {
        const [s0] = await steps(runId);
        expect(s0!.attempts).toHaveLength(1);
        expect(s0!.attempts[0]!.outcome).toBe("succeeded");
        expect(s0!.attempts[0]!.error).toBeUndefined();
        expect(s0!.attempts[0]!.stack).toBeUndefined();
        expect(s0!).toMatchObject({ kvPuts: [], kvDeletes: [], memoKeys: [], kvEffects: 0, memoKeysWritten: 0 });
        expect(s0!.transition).toBeUndefined();
      }
      const [k0, k1] = await steps("kv");
      expect(k0!.attempts[0]!.error).toBeUndefined();
      expect(k0!.attempts[0]!.stack).toBeUndefined();
      expect(k0!).toMatchObject({ kvPuts: ["k-kv"], memoKeys: ["m"], kvEffects: 1, memoKeysWritten: 1 });
      expect(k0!.transition).toEqual({ kind: "immediate" });
      expect(k1!).toMatchObject({ kvPuts: [], memoKeys: [], kvEffects: 0, memoKeysWritten: 0 });
      expect(k1!.attempts[0]!.error).toBeUndefined();
      expect(k1!.transition).toBeUndefined();
    } finally {
      await env.stop();
    }
  });
});
