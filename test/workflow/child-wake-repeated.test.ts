/**
 * @module "Repeating the wake-up is harmless": a child-ended job run again
 * (reconciliation of a dead one at every start, a late duplicate) while
 * the parent waits for an end that is not there must not wake the parent,
 * which would see its wait end with no signal (a timeout). The parent
 * keeps waiting and gets the child's end when it comes.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";

const runner: StepRunner = {
  async runStep(s) {
    const p = dec(s.payload);
    if (p === "parent") {
      const c = await s.children.start({ input: enc("child") });
      return StepOutcome.continueOnChild(enc("join"), c.completionKey);
    }
    if (p === "join") {
      if (!(s.signal instanceof Uint8Array)) return StepOutcome.fail("woken without the child's end");
      const o = await s.children.outcome(s.signal);
      return StepOutcome.succeed(enc(`${o.status}:${dec(o.result)}`));
    }
    if (p === "child") return StepOutcome.continueOnSignal(enc("child-end"), `go-${s.runId}`, 3_600_000);
    return StepOutcome.succeed(enc(`done+${dec(s.signal as Uint8Array)}`));
  },
};

describe("a repeated child-ended job", () => {
  it("does not wake a parent whose child has not ended", async () => {
    const env = await openEnv(runner);
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(async () => (await env.runtime.status("p"))?.step === 1 && (await env.runtime.status("p-s0-0"))?.step === 1, "the family waits");
      // The wake-up job as a child's termination enqueues it, run while the child still runs.
      const key = "workflow.child/p/p-s0-0";
      const { encodeValue } = await import("../../runtime/workflow/records/codec.js");
      const job = await env.queue.enqueue("workflow-steps", encodeValue("p"), { headers: { "workflow.child_ended": key } });
      await until(async () => (await env.queue.view().job(job.jobId))?.state !== "pending", "the wake-up job ran");
      await env.queue.waitForCompletion(job.jobId, { timeoutMs: 5000 });
      expect(await env.runtime.signal("go-p-s0-0", enc("go"))).toBe("delivered");
      await until(async () => (await env.runtime.outcome("p")) !== null, "the parent ends");
      expect(await env.runtime.outcome("p")).toMatchObject({ status: "succeeded" });
      expect(dec((await env.runtime.outcome("p"))?.result)).toBe("succeeded:done+go");
    } finally {
      await env.stop();
    }
  });
});
