/**
 * @module A removal's confirmed plan names the run and the records it was
 * made from: the token of one run's dry run removes no other run, and the
 * token of a run removed since removes no run submitted under its id
 * afterwards, however alike their records and what the removal takes.
 * Both are refused with `RepairPlanChangedError`, nothing written, as is
 * one run's repair plan given for another run holding the same damage.
 */
import { describe, expect, it } from "vitest";
import { RepairPlanChangedError, StepOutcome } from "taquba";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const Q = "workflow-steps";
const NOT_A_RECORD = new Uint8Array([0xc1, 0xff, 0x00]);
const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

describe("a removal's confirmed plan is bound to its run", () => {
  it("refuses another run's plan, though both runs ended alike", async () => {
    const env = await openEnv(echo);
    try {
      for (const id of ["a", "b"]) {
        await env.runtime.submit({ runId: id, input: enc("x") });
        expect((await env.runtime.wait(id)).termination.status).toBe("succeeded");
      }
      const planOfA = (await env.runtime.repairRun("a", { remove: true, dryRun: true })).plan;
      const refused = await env.runtime.repairRun("b", { remove: true, plan: planOfA }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RepairPlanChangedError);
      expect(refused).toMatchObject({ runId: "b" });
      expect(await env.runtime.status("b")).toMatchObject({ state: "terminated", status: "succeeded" });
      // A's own plan still removes A.
      expect(await env.runtime.repairRun("a", { remove: true, plan: planOfA })).toMatchObject({ action: "removed" });
      expect(await env.runtime.status("a")).toBeNull();
    } finally {
      await env.stop();
    }
  });

  it("refuses another run's repair plan, though both runs hold the same damage", async () => {
    const env = await openEnv(echo);
    try {
      for (const id of ["a", "b"]) {
        await env.runtime.submit({ runId: id, input: enc("x") });
        await env.runtime.wait(id);
        await env.queue.kvPut(terminalRecordKey(Q, id), NOT_A_RECORD);
      }
      const planOfA = (await env.runtime.repairRun("a", { dryRun: true })).plan;
      const refused = await env.runtime.repairRun("b", { plan: planOfA }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RepairPlanChangedError);
      expect(await env.queue.kvGet(terminalRecordKey(Q, "b"))).toEqual(NOT_A_RECORD);
      expect(await env.runtime.repairRun("a", { plan: planOfA })).toMatchObject({ plan: planOfA, dryRun: false });
      expect(await env.queue.kvGet(terminalRecordKey(Q, "a"))).not.toEqual(NOT_A_RECORD);
    } finally {
      await env.stop();
    }
  });

  it("refuses a removed run's plan replayed on a run submitted under its id since", async () => {
    const env = await openEnv(echo);
    try {
      await env.runtime.submit({ runId: "r", input: enc("first") });
      await env.runtime.wait("r");
      const plan = (await env.runtime.repairRun("r", { remove: true, dryRun: true })).plan;
      await env.runtime.repairRun("r", { remove: true, plan });
      expect(await env.runtime.status("r")).toBeNull();
      // Another submission under the id, which ends as the first did.
      await env.runtime.submit({ runId: "r", input: enc("second") });
      expect((await env.runtime.wait("r")).termination.status).toBe("succeeded");
      const end = await env.queue.kvGet(terminalRecordKey(Q, "r"));
      const replayed = await env.runtime.repairRun("r", { remove: true, plan }).catch((e: unknown) => e);
      expect(replayed).toBeInstanceOf(RepairPlanChangedError);
      expect(await env.queue.kvGet(terminalRecordKey(Q, "r"))).toEqual(end);
      expect(await env.runtime.outcome("r")).toMatchObject({ status: "succeeded", result: enc("second") });
    } finally {
      await env.stop();
    }
  });
});
