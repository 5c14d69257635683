/**
 * @module Outcome precedence (runner cancel, external cancel, continue,
 * succeed, fail, errors) checked against a model with generated cases.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { StepError, StepOutcome, type RunErrorKind, type TerminalStatus } from "taquba";
import { enc, openEnv, runnerOf } from "./helpers.js";
import { HEAVY_TEST_MS } from "../support/load.js";

type Behaviour = "continue" | "succeed" | "fail" | "cancel" | "transient" | "permanent";
const MAX_ATTEMPTS = 3;
const MAX_STEPS = 4;

/** What the seed says a script of behaviours ends as: status, error kind, final step, runner calls. */
function model(script: Behaviour[][]): { status: TerminalStatus; errorKind?: RunErrorKind; finalStep: number; calls: number } {
  let calls = 0;
  for (let step = 0; ; step++) {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const b = step >= MAX_STEPS ? "succeed" : script[step]![attempt - 1]!;
      calls++;
      if (b === "transient") {
        if (attempt === MAX_ATTEMPTS) return { status: "failed", errorKind: "transient", finalStep: step, calls };
        continue;
      }
      if (b === "permanent") return { status: "failed", errorKind: "permanent", finalStep: step, calls };
      if (b === "succeed") return { status: "succeeded", finalStep: step, calls };
      if (b === "fail") return { status: "failed", errorKind: "runner", finalStep: step, calls };
      if (b === "cancel") return { status: "cancelled", errorKind: "runner", finalStep: step, calls };
      break; // continue: next step
    }
  }
}

const behaviour = fc.constantFrom<Behaviour>("continue", "continue", "continue", "succeed", "fail", "cancel", "transient", "transient", "permanent");
const scriptArb = fc.array(fc.array(behaviour, { minLength: MAX_ATTEMPTS, maxLength: MAX_ATTEMPTS }), { minLength: MAX_STEPS, maxLength: MAX_STEPS });

describe("outcome precedence against a model", () => {
  it("every script of step behaviours ends as the model says", { timeout: HEAVY_TEST_MS }, async () => {
    const scripts = new Map<string, Behaviour[][]>();
    const calls = new Map<string, number>();
    const env = await openEnv(
      runnerOf(async (s) => {
        calls.set(s.runId, (calls.get(s.runId) ?? 0) + 1);
        const b = s.stepNumber >= MAX_STEPS ? "succeed" : scripts.get(s.runId)![s.stepNumber]![s.attempt - 1]!;
        switch (b) {
          case "continue":
            return StepOutcome.continueNow(s.payload);
          case "succeed":
            return StepOutcome.succeed(s.payload);
          case "fail":
            return StepOutcome.fail("f");
          case "cancel":
            return StepOutcome.cancel("c");
          case "transient":
            throw StepError.transient("t");
          case "permanent":
            throw StepError.permanent("p");
        }
      }),
      // Retries requeue at once, so the property needs no clock.
      { queueOptions: { queueConfigs: { "workflow-steps": { maxAttempts: MAX_ATTEMPTS, backoff: { baseMs: 0, maxMs: 0 } } } } },
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(scriptArb, async (script) => {
        const runId = `p${n++}`;
        scripts.set(runId, script);
        await env.runtime.submit({ input: enc("x"), runId });
        const end = await env.runtime.wait(runId);
        const want = model(script);
        expect({ status: end.termination.status, errorKind: end.termination.errorKind, finalStep: end.termination.finalStep, calls: calls.get(runId) }).toEqual(
          want,
        );
      }),
      { numRuns: 60 },
    );
    await env.stop();
  });
});
