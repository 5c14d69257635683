/**
 * @module `repairRun` with `remove` and a confirmed plan (`plan`, the token
 * of a dry run with `remove`): the removal does what its dry run said or
 * nothing. A run whose records changed after the dry run, or between the
 * removal's read and the commit that ends it, is refused with
 * `RepairPlanChangedError` and left as it was, not removed.
 */
import { describe, expect, it } from "vitest";
import { pack } from "msgpackr";
import { RepairPlanChangedError, StepOutcome, type Queue } from "taquba";
import { childrenPrefix, runKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { indexKeyOf } from "./fixtures/run-index-key.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const Q = "workflow-steps";
const NOT_A_RECORD = new Uint8Array([0xc1, 0xff, 0x00]);
const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

describe("a removal with a confirmed plan", () => {
  it("removes an ended run by the plan its dry run answered", async () => {
    const env = await openEnv(echo);
    try {
      await env.runtime.submit({ runId: "r", input: enc("x") });
      expect((await env.runtime.wait("r")).termination.status).toBe("succeeded");
      const dry = await env.runtime.repairRun("r", { remove: true, dryRun: true });
      expect(dry).toMatchObject({ action: "removed", dryRun: true, plan: expect.stringMatching(/^[0-9a-f]{64}$/) });
      const out = await env.runtime.repairRun("r", { remove: true, plan: dry.plan });
      expect(out).toMatchObject({ action: "removed", dryRun: false, plan: dry.plan });
      expect(await env.runtime.status("r")).toBeNull();
    } finally {
      await env.stop();
    }
  });

  it("refuses the plan when the ended run changed after the dry run, removing nothing", async () => {
    const env = await openEnv(echo);
    try {
      await env.runtime.submit({ runId: "r", input: enc("x") });
      await env.runtime.wait("r");
      const indexKey = await indexKeyOf(env.queue, "r");
      const dry = await env.runtime.repairRun("r", { remove: true, dryRun: true });
      // Its end record is damaged since: the removal would mend it first, which nobody was shown.
      await env.queue.kvPut(terminalRecordKey(Q, "r"), NOT_A_RECORD);
      const refused = await env.runtime.repairRun("r", { remove: true, plan: dry.plan }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RepairPlanChangedError);
      expect(refused).toMatchObject({ code: "REPAIR_PLAN_CHANGED", runId: "r" });
      expect(await env.queue.kvGet(terminalRecordKey(Q, "r"))).toEqual(NOT_A_RECORD);
      expect(await env.queue.kvGet(indexKey)).not.toBeNull();
      // The new plan, confirmed, is carried out.
      const again = await env.runtime.repairRun("r", { remove: true, dryRun: true });
      expect(again.plan).not.toBe(dry.plan);
      expect(await env.runtime.repairRun("r", { remove: true, plan: again.plan })).toMatchObject({ action: "removed", plan: again.plan });
      expect(await env.queue.kvGet(terminalRecordKey(Q, "r"))).toBeNull();
      expect(await env.queue.kvGet(indexKey)).toBeNull();
    } finally {
      await env.stop();
    }
  });

  it("refuses the plan when an active run changed after the dry run: the run goes on", async () => {
    const env = await openEnv(echo, { start: false });
    try {
      await env.runtime.submit({ runId: "r", input: enc("x") });
      const dry = await env.runtime.repairRun("r", { remove: true, endActive: true, dryRun: true });
      // Its listing entry is damaged since.
      const indexKey = await indexKeyOf(env.queue, "r");
      await env.queue.kvPut(indexKey, new Uint8Array(pack({ headers: 7 })));
      await expect(env.runtime.repairRun("r", { remove: true, endActive: true, plan: dry.plan })).rejects.toThrow(RepairPlanChangedError);
      expect(await env.runtime.status("r")).toMatchObject({ state: "pending", step: 0 });
      expect(await env.queue.kvGet(indexKey)).toEqual(new Uint8Array(pack({ headers: 7 })));
    } finally {
      await env.stop();
    }
  });

  it("refuses the plan when the run changes between the removal's read and the commit that ends it", async () => {
    let armed = false;
    let raced = 0;
    // After the removal read the run and worked out its plan (its last read: the children's entries), its run record is damaged.
    const racing = (queue: Queue): Queue =>
      new Proxy(queue, {
        get(t, name) {
          if (name === "kvScan")
            return async (...args: Parameters<Queue["kvScan"]>) => {
              const out = await t.kvScan(...args);
              if (armed && args[0] === childrenPrefix(Q, "r") && raced === 0) {
                raced++;
                await t.kvPut(runKey(Q, "r"), NOT_A_RECORD);
              }
              return out;
            };
          const v = Reflect.get(t, name, t) as unknown;
          return typeof v === "function" ? v.bind(t) : v;
        },
      });
    const env = await openEnv(echo, { start: false, wrapQueue: racing });
    try {
      await env.runtime.submit({ runId: "r", input: enc("x") });
      const dry = await env.runtime.repairRun("r", { remove: true, endActive: true, dryRun: true });
      armed = true;
      const refused = await env.runtime.repairRun("r", { remove: true, endActive: true, plan: dry.plan }).catch((e: unknown) => e);
      expect(raced).toBe(1);
      // Without the check at the end's read, the run was ended and removed by a plan nobody was shown.
      expect(refused).toBeInstanceOf(RepairPlanChangedError);
      expect(await env.queue.kvGet(runKey(Q, "r"))).toEqual(NOT_A_RECORD);
      expect(await env.queue.kvGet(terminalRecordKey(Q, "r"))).toBeNull();
    } finally {
      await env.stop();
    }
  });
});
