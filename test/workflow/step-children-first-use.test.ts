/**
 * @module A step's `children`, whose state is made on first use: a runner
 * that kept it without touching it, and starts a child after its step
 * returned, is refused as one that used it during the step is; no child is
 * made. Reads of its methods before and after the return are the same.
 */
import { describe, expect, it } from "vitest";
import { type ChildRuns, StepOutcome, ValidationError } from "taquba";
import { enc, openEnv, runnerOf } from "./helpers.js";

describe("a step's children made on first use", () => {
  it("kept untouched and used after the step returned: the start is refused, and no child run exists", async () => {
    let kept: ChildRuns | undefined;
    const env = await openEnv(
      runnerOf(async (s) => {
        kept = s.children;
        return StepOutcome.succeed(enc("done"));
      }),
    );
    try {
      await env.runtime.submit({ runId: "p", input: enc("in") });
      expect((await env.runtime.wait("p")).outcome?.status).toBe("succeeded");
      const refused = await kept!.start({ input: enc("late") }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as Error).message).toMatch(/step 0 of run "p" already returned, so its children.start can start no child run/);
      expect(await env.runtime.status("p-s0-0")).toBeNull();
      // Its other methods answer after the return as during the step.
      expect(kept!.waitedChild()).toBeUndefined();
      expect(kept!.completionKey("c1")).toBe("workflow.child/p/c1");
      const { start } = kept!;
      expect(start).toBe(kept!.start);
    } finally {
      await env.stop();
    }
  });
});
