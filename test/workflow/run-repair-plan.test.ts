/**
 * @module `repairRun` with a confirmed plan (`plan`, a dry run's token, as
 * the dashboard's repair carries it): the repair does what the dry run said
 * or nothing. A run whose records changed after the dry run, or between the
 * repair's read and its commit, is refused with `RepairPlanChangedError`
 * and left as it was, not repaired by the plan its records then give.
 */
import { describe, expect, it } from "vitest";
import { pack } from "msgpackr";
import { RepairPlanChangedError, StepOutcome, ValidationError, type Queue } from "taquba";
import { runKey } from "../../runtime/workflow/records/kv-keys.js";
import { indexKeyOf } from "./fixtures/run-index-key.js";
import { enc, type Env, openEnv, runnerOf } from "./helpers.js";

const Q = "workflow-steps";
const NOT_A_RECORD = new Uint8Array([0xc1, 0xff, 0x00]);

/** An env whose run "r" is active (its first step pending, no worker) and whose listing entry does not read. */
async function envWithDamagedEntry(wrapQueue?: (q: Queue) => Queue): Promise<{ env: Env; indexKey: string }> {
  const env = await openEnv(
    runnerOf(async (s) => StepOutcome.succeed(s.payload)),
    { start: false, ...(wrapQueue === undefined ? {} : { wrapQueue }) },
  );
  await env.runtime.submit({ runId: "r", input: enc("x") });
  const indexKey = await indexKeyOf(env.queue, "r");
  await env.queue.kvPut(indexKey, new Uint8Array(pack({ headers: 7 })));
  return { env, indexKey };
}

describe("repairRun with a confirmed plan", () => {
  it("does the plan its dry run answered, with the same token", async () => {
    const { env, indexKey } = await envWithDamagedEntry();
    try {
      const dry = await env.runtime.repairRun("r", { dryRun: true });
      expect(dry).toMatchObject({ action: "index_rewritten", dryRun: true, plan: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(await env.runtime.repairRun("r", { dryRun: true })).toMatchObject({ plan: dry.plan });
      const out = await env.runtime.repairRun("r", { plan: dry.plan });
      expect(out).toMatchObject({ action: "index_rewritten", dryRun: false, plan: dry.plan });
      expect(await env.runtime.status("r")).toMatchObject({ state: "pending", step: 0 });
      expect((await env.runtime.listRuns({ limit: 10 })).runs.map((r) => r.runId)).toEqual(["r"]);
      expect(await env.queue.kvGet(indexKey)).not.toEqual(new Uint8Array(pack({ headers: 7 })));
    } finally {
      await env.stop();
    }
  });

  it("refuses the plan when the run changed after the dry run, writing nothing", async () => {
    const { env, indexKey } = await envWithDamagedEntry();
    try {
      const dry = await env.runtime.repairRun("r", { dryRun: true });
      expect(dry.action).toBe("index_rewritten");
      // Now its run record is damaged too: the repair would end the run, which nobody confirmed.
      await env.queue.kvPut(runKey(Q, "r"), NOT_A_RECORD);
      const refused = await env.runtime.repairRun("r", { plan: dry.plan }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RepairPlanChangedError);
      expect(refused).toMatchObject({ code: "REPAIR_PLAN_CHANGED", runId: "r" });
      expect((refused as Error).message).toMatch(/the run changed since you looked.*review the new plan/);
      expect(await env.queue.kvGet(runKey(Q, "r"))).toEqual(NOT_A_RECORD);
      expect(await env.queue.kvGet(indexKey)).toEqual(new Uint8Array(pack({ headers: 7 })));
      // The new plan, confirmed, is carried out.
      const again = await env.runtime.repairRun("r", { dryRun: true });
      expect(again).toMatchObject({ action: "ended_failed" });
      expect(again.plan).not.toBe(dry.plan);
      expect(await env.runtime.repairRun("r", { plan: again.plan })).toMatchObject({ action: "ended_failed", plan: again.plan });
      expect((await env.runtime.wait("r")).termination.status).toBe("failed");
    } finally {
      await env.stop();
    }
  });

  it("refuses the plan when the run changes between the repair's read and its commit", async () => {
    let armed = false;
    let raced = 0;
    let target: Queue | undefined;
    // At the repair's commit (armed), its run record is damaged and its listing entry rewritten with other damaged bytes first.
    const racing = (queue: Queue): Queue =>
      new Proxy(queue, {
        get(t, name) {
          if (name === "kvCompareAndApply")
            return async (...args: Parameters<Queue["kvCompareAndApply"]>) => {
              if (armed && raced++ === 0) {
                await t.kvPut(runKey(Q, "r"), NOT_A_RECORD);
                await t.kvPut(args[0][0]!.key, new Uint8Array(pack({ headers: 8 })));
              }
              return t.kvCompareAndApply(...args);
            };
          const v = Reflect.get(t, name, t) as unknown;
          return typeof v === "function" ? v.bind(t) : v;
        },
      });
    const { env, indexKey } = await envWithDamagedEntry((q) => (target = racing(q)));
    try {
      expect(target).toBeDefined();
      const dry = await env.runtime.repairRun("r", { dryRun: true });
      armed = true;
      const refused = await env.runtime.repairRun("r", { plan: dry.plan }).catch((e: unknown) => e);
      expect(raced).toBe(1);
      expect(refused).toBeInstanceOf(RepairPlanChangedError);
      // Nothing of the repair landed: the racer's bytes stand, and the run was not ended.
      expect(await env.queue.kvGet(runKey(Q, "r"))).toEqual(NOT_A_RECORD);
      expect(await env.queue.kvGet(indexKey)).toEqual(new Uint8Array(pack({ headers: 8 })));
      expect(await env.runtime.repairRun("r", { dryRun: true })).toMatchObject({ action: "ended_failed" });
    } finally {
      await env.stop();
    }
  });

  it("refuses a plan that is no token before reading, and a repair's plan with a removal", async () => {
    const { env } = await envWithDamagedEntry();
    try {
      for (const plan of ["", "abc", "G".repeat(64), 5, null])
        await expect(env.runtime.repairRun("r", { plan } as unknown as { plan: string })).rejects.toThrow(ValidationError);
      const dry = await env.runtime.repairRun("r", { dryRun: true });
      // A repair's plan is not a removal's: the removal is refused, nothing written.
      await expect(env.runtime.repairRun("r", { plan: dry.plan, remove: true, endActive: true })).rejects.toThrow(RepairPlanChangedError);
      expect(await env.runtime.status("r")).toMatchObject({ state: "pending" });
    } finally {
      await env.stop();
    }
  });
});
