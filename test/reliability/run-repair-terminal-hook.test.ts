/**
 * @module `repairRun` of an active run on a runtime whose terminal hook
 * observes ends (any hook but `NoopTerminalHook`). The end a repair commits
 * carries the hook's notification job, as every end does. Where no pending
 * or scheduled step job could carry that commit (the step pointer no longer
 * names a job, or the step is claimed and running), the repair refused its
 * own commit ("kvCompareAndApply commits caller KV effects only, not
 * enqueues"), so such a run could not be repaired at all. Each case here
 * must end the run failed, tell the hook once, and refuse a second repair
 * that raced it as not damaged.
 */
import { describe, expect, it } from "vitest";
import { pack } from "msgpackr";
import { RunNotDamagedError, StepOutcome, WorkflowRuntime, type RunOutcome } from "taquba";
import { stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { enc, openEnv, recordingHook, runnerOf, settle, until } from "../workflow/helpers.js";

const Q = "workflow-steps";
const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

/** Waits until the hook was told of `runId`'s end, lets the worker go on a while, and returns every telling of it. */
async function toldOf(hook: { seen: RunOutcome[] }, runId: string): Promise<RunOutcome[]> {
  await until(() => hook.seen.some((o) => o.runId === runId), `the hook is told of ${runId}'s end`, 10_000);
  await settle(50);
  return hook.seen.filter((o) => o.runId === runId);
}

describe("repairRun of an active run with a terminal hook", () => {
  it("ends a run whose step pointer is damaged and tells the hook once", async () => {
    const hook = recordingHook();
    const env = await openEnv(echo, { start: false, hook });
    try {
      await env.runtime.submit({ runId: "damaged", input: enc("x") });
      await env.queue.kvPut(stepPointerKey(Q, "damaged"), new Uint8Array(pack("not a pointer")));
      expect(await env.runtime.repairRun("damaged")).toMatchObject({ action: "ended_failed", dryRun: false, damaged: [{ record: "step_pointer" }] });
      const worker = env.runtime.spawn();
      try {
        const told = await toldOf(hook, "damaged");
        expect(told.map((o) => o.status)).toEqual(["failed"]);
        expect((await env.runtime.wait("damaged")).termination).toMatchObject({
          status: "failed",
          error: expect.stringMatching(/^repaired by an operator: its step pointer was damaged/),
        });
      } finally {
        await worker.shutdown();
      }
      await expect(env.runtime.repairRun("damaged")).rejects.toThrow(RunNotDamagedError);
    } finally {
      await env.stop();
    }
  });

  it("of two repairs at once from two runtimes, one ends the run and the other is refused; the hook is told once", async () => {
    const hook = recordingHook();
    const env = await openEnv(echo, { start: false, hook });
    const other = WorkflowRuntime.builder(env.queue, env.store, echo, hook).build();
    try {
      await env.runtime.submit({ runId: "damaged", input: enc("x") });
      await env.queue.kvPut(stepPointerKey(Q, "damaged"), new Uint8Array(pack({ step: -1 })));
      const results = await Promise.allSettled([env.runtime.repairRun("damaged"), other.repairRun("damaged"), env.runtime.repairRun("damaged")]);
      const ended = results.filter((r) => r.status === "fulfilled");
      expect(ended.map((r) => r.value.action)).toEqual(["ended_failed"]);
      for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(RunNotDamagedError);
      const worker = env.runtime.spawn();
      try {
        expect((await toldOf(hook, "damaged")).map((o) => o.status)).toEqual(["failed"]);
      } finally {
        await worker.shutdown();
      }
    } finally {
      await env.stop();
    }
  });
});
