/**
 * @module A run id submitted again reads none of the earlier run's memos
 * also when a custom `WorkflowQueue` names its step jobs, and so may hand
 * the later submission's first step the id the earlier run's first step had.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { namingQueue } from "./fixtures/naming-queue.js";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";

describe("a run id submitted again whose first step a naming queue names as the earlier one's", () => {
  it("computes its memos afresh", async () => {
    let computed = 0;
    const runner = runnerOf(async (s) => {
      const v = await s.memo.memoized("k", async () => {
        computed++;
        return dec(s.payload);
      });
      const r = await s.runMemo.memoized("k", async () => {
        computed++;
        return dec(s.payload);
      });
      return StepOutcome.succeed(enc(`${v}|${r}`));
    });
    const env = await openEnv(runner, { wrapQueue: namingQueue(["first", "first", "first", "first"]) });
    try {
      await env.runtime.submit({ runId: "a", input: enc("one") });
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("one|one");
      const first = (await env.runtime.inspectRun("a"))!.memoSet;
      expect((await env.runtime.submit({ runId: "a", input: enc("two") })).newlySubmitted).toBe(true);
      const end = await env.runtime.wait("a");
      expect((await env.runtime.inspectRun("a"))!.memoSet).not.toBe(first);
      expect(dec(end.outcome!.result)).toBe("two|two");
      expect(computed).toBe(4);
    } finally {
      await env.stop();
    }
  });
});
