/**
 * @module The handles a step hands its runner, used the ways a runner may
 * use them: `step.children`'s methods taken off their object (they are made
 * when first read, bound to the step's children), each the same function on
 * every read; and the memo keys a step writes, in its history, the run
 * memo's prefixed `run:`.
 */
import { describe, expect, it } from "vitest";
import { type ChildRuns, StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";

describe("a step's handles", () => {
  it("children's methods work taken off the object, are the same function on every read, and answer for the step they came with", async () => {
    const seen: { same: boolean[]; waited: (string | undefined)[]; keys: string[] } = { same: [], waited: [], keys: [] };
    const runner: StepRunner = {
      async runStep(s) {
        const p = dec(s.payload);
        if (p === "child") return StepOutcome.succeed(enc("child-done"));
        const children: ChildRuns = s.children;
        const { start, completionKey, outcome, waitedChild } = children;
        seen.same.push(
          children.start === start && children.completionKey === completionKey && children.outcome === outcome && children.waitedChild === waitedChild,
        );
        seen.waited.push(waitedChild());
        if (p === "parent") {
          const started = await start({ input: enc("child") });
          seen.keys.push(started.completionKey, completionKey(started.runId));
          return StepOutcome.continueOnChild(enc("join"), started.completionKey);
        }
        const o = await outcome(s.signal as Uint8Array);
        return StepOutcome.succeed(enc(o.status === "succeeded" ? `${o.runId}:${dec(o.result)}` : o.status));
      },
    };
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "p1", input: enc("parent") });
    await until(async () => (await env.runtime.outcome("p1")) !== null, "the parent's end");
    const out = await env.runtime.outcome("p1");
    expect(out?.status).toBe("succeeded");
    const childId = dec((out as { result: Uint8Array }).result).split(":")[0]!;
    expect(dec((out as { result: Uint8Array }).result)).toBe(`${childId}:child-done`);
    // Both the started child's key and `completionKey` of its id name the same key.
    expect(seen.keys).toEqual([`workflow.child/p1/${childId}`, `workflow.child/p1/${childId}`]);
    // The parent's two steps read their methods the same each time; the join step waited for the child.
    expect(seen.same.every((x) => x)).toBe(true);
    expect(seen.waited).toEqual([undefined, childId]);
    await env.stop();
  });

  it("the memo keys a step writes are in its history, the run memo's prefixed run:", async () => {
    const runner: StepRunner = {
      async runStep(s) {
        await s.memo.memoized("own", async () => enc("a"));
        await s.runMemo.memoized("shared", async () => enc("b"));
        return s.stepNumber === 0 ? StepOutcome.continueNow(enc("next")) : StepOutcome.succeed(enc("done"));
      },
    };
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "m1", input: enc("x") });
    await env.runtime.wait("m1");
    const history = await env.runtime.inspectRun("m1");
    // The second step finds the run memo's entry written: only its own key is new.
    expect(history!.steps.map((s) => s.memoKeys)).toEqual([["own", "run:shared"], ["own"]]);
    await env.stop();
  });
});
