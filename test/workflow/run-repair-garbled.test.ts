/**
 * @module `repairRun` over records that are no records at all (bytes that
 * are not MessagePack, a string instead of a map): the run still ends
 * failed, with the defaults the repair documents (final step 0); a step job
 * no record names any more is claimed later and finds the run ended,
 * leaving it failed. Bad arguments change nothing.
 */
import { describe, expect, it } from "vitest";
import { pack } from "msgpackr";
import { InvalidRunIdError, RunNotFoundError, StepOutcome } from "taquba";
import { runKey, stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

const Q = "workflow-steps";

describe("repairRun over garbled records", () => {
  it("ends the run failed when neither its run record nor its step pointer decodes at all", async () => {
    let ran = 0;
    const env = await openEnv(
      runnerOf(async (s) => {
        ran++;
        return StepOutcome.succeed(s.payload);
      }),
      { start: false },
    );
    try {
      await env.runtime.submit({ runId: "g", input: enc("x") });
      await env.runtime.submit({ runId: "ok", input: enc("x") });
      await env.queue.kvPut(runKey(Q, "g"), new Uint8Array([0xc1, 0xff, 0x00]));
      await env.queue.kvPut(stepPointerKey(Q, "g"), new Uint8Array(pack("not a pointer")));
      const out = await env.runtime.repairRun("g");
      expect(out).toMatchObject({ action: "ended_failed", dryRun: false });
      expect(out.damaged.map((d) => d.record).sort()).toEqual(["run_record", "step_pointer"]);
      expect(out.stepJobId).toBeUndefined();
      expect((await env.runtime.wait("g")).termination).toMatchObject({ status: "failed", finalStep: 0 });
      // The worker then runs the healthy run; the step job of "g", which no record names, leaves "g" as it ended.
      const worker = env.runtime.spawn();
      try {
        expect((await env.runtime.wait("ok")).termination.status).toBe("succeeded");
        await until(async () => (await env.queue.view().stats(Q)).pending === 0, "the step queue drained");
        expect(await env.runtime.outcome("g")).toMatchObject({
          status: "failed",
          error: expect.stringMatching(/^repaired by an operator: its run record was damaged/),
        });
        expect(ran).toBe(1);
        expect(env.logged).toEqual([]);
      } finally {
        await worker.shutdown();
      }
    } finally {
      await env.stop();
    }
  });

  it("refuses bad arguments and unknown runs, changing nothing", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    try {
      await expect(env.runtime.repairRun("bad id!")).rejects.toThrow(/run id/i);
      await expect(env.runtime.repairRun("x".repeat(129))).rejects.toThrow();
      await expect(env.runtime.repairRun("nope")).rejects.toThrow(RunNotFoundError);
      await expect(env.runtime.repairRun(undefined as unknown as string)).rejects.toThrow(InvalidRunIdError);
    } finally {
      await env.stop();
    }
  });
});
