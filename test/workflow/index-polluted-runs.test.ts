/**
 * @module Workflow runs while `Object.prototype` holds a plain value under
 * an index ("0", "1", ...), as merging a parsed `{"__proto__": {"0": ...}}`
 * sets it. Reading an array past its end then finds that value instead of
 * undefined:
 *
 * - the memo sweeper read the first retention marker of an empty listing
 *   to learn when to sweep next: every pass that left no marker failed
 *   with a `TypeError`;
 * - a step's history key took its zero-padded number from a cache read
 *   past its end: a step not yet cached was keyed by the prototype's value.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { stepHistoryKey } from "../../runtime/workflow/runs/history-records.js";
import { whilePolluted, withPolluted } from "../support/polluted-prototype.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const RETENTION = 60_000;

describe('the memo sweeper under a plain "0" on Object.prototype', () => {
  it("sweeps an expired run, then finds nothing more to sweep", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { configure: (b) => b.memoRetention(RETENTION).pollIntervalMs(3_600_000) },
    );
    try {
      await whilePolluted({ "0": "planted" }, async () => {
        // No marker yet.
        expect(await env.runtime.sweepMemos()).toBe(0);
        await env.runtime.submit({ runId: "r", input: enc("x") });
        await env.runtime.wait("r");
        env.clock.advance(RETENTION + 1);
        expect(await env.runtime.sweepMemos()).toBe(1);
        expect(await env.runtime.sweepMemos()).toBe(0);
      });
    } finally {
      await env.stop();
    }
  });
});

describe("a step's history key under a plain value at its number's index of Object.prototype", () => {
  // Steps far above any this file runs, so none is cached when asked (the cache lives as long as the module).
  for (const step of [700, 1000, 1023]) {
    it(`ends with the step's padded number (step ${step})`, () => {
      const key = withPolluted({ [String(step)]: "planted" }, () => stepHistoryKey("workflow-steps", "run-1", step));
      expect(key.endsWith(`/run-1/${String(step).padStart(10, "0")}`)).toBe(true);
      expect(stepHistoryKey("workflow-steps", "run-1", step)).toBe(key);
    });
  }
});
