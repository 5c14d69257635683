/**
 * @module `repairRun` of an active run whose step is claimed and running
 * (the damage is in a record beside the run's own, so the step opened):
 * the repair ends the run failed and asks the step to stop. The step's
 * settlement then ended the run a second time (cancelled, or by the
 * runner's own outcome), writing over the repaired end: the listing and
 * the group counted it cancelled, and a terminal hook was told twice. The
 * step's settlement must find the run ended and write nothing of its own,
 * whatever its runner returned, and a later submission of the same run id
 * must not be ended by the old step.
 */
import { describe, expect, it } from "vitest";
import { pack, unpack } from "msgpackr";
import { StepOutcome, type RunOutcome } from "taquba";
import { groupMemberKey } from "../../runtime/workflow/records/kv-keys.js";
import { groupTag } from "../../runtime/workflow/groups/group-keys.js";
import { enc, openEnv, recordingHook, runnerOf, settle, until } from "../workflow/helpers.js";

const Q = "workflow-steps";

/** What the held step's runner returns once released. */
const OUTCOMES: [string, () => StepOutcome][] = [
  ["succeeds", () => StepOutcome.succeed(enc("late"))],
  ["continues at once", () => StepOutcome.continueNow(enc("next"))],
  ["fails", () => StepOutcome.fail("late failure")],
  [
    "throws",
    () => {
      throw new Error("late throw");
    },
  ],
];

describe("repairRun of a run whose step is claimed and running", () => {
  it.each(OUTCOMES)("keeps the repaired end when the step then %s: one end, the hook told once", async (_what, late) => {
    const hook = recordingHook();
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let started = 0;
    const env = await openEnv(
      runnerOf(async (s) => {
        if (s.stepNumber > 0) return StepOutcome.succeed(s.payload);
        started++;
        await released;
        return late();
      }),
      { hook },
    );
    try {
      await env.runtime.group("g").submit([{ key: "a", input: enc("x") }]);
      await until(() => started === 1, "the member's step runs");
      const member = (await env.runtime.listRuns({ limit: 10 })).runs.find((r) => r.group?.id === "g")!.runId;
      const key = groupMemberKey(Q, groupTag("g"), "a");
      await env.queue.kvPut(key, new Uint8Array(pack({ ...(unpack((await env.queue.kvGet(key))!) as object), state: "lost" })));
      expect(await env.runtime.repairRun(member)).toMatchObject({ action: "ended_failed", damaged: [{ record: "group_member" }] });
      release();
      await until(async () => (await env.queue.view().stats(Q)).claimed === 0, "the step settled", 10_000);
      await until(() => hook.seen.some((o: RunOutcome) => o.runId === member), "the hook is told", 10_000);
      await settle(50);
      expect(hook.seen.filter((o) => o.runId === member).map((o) => o.status)).toEqual(["failed"]);
      expect((await env.runtime.wait(member)).termination).toMatchObject({
        status: "failed",
        error: expect.stringMatching(/its group member record was damaged/),
      });
      expect(await env.runtime.group("g").status()).toMatchObject({ failed: 1, succeeded: 0, cancelled: 0 });
      expect((await env.runtime.listRuns({ state: "failed", limit: 10 })).runs.map((r) => r.runId)).toEqual([member]);
    } finally {
      release();
      await env.stop();
    }
  });

  it("a new submission of the run id, made while the old step still ran, is not ended by that step", async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let held = 0;
    const env = await openEnv(
      runnerOf(async (s) => {
        if (new TextDecoder().decode(s.payload) !== "hold") return StepOutcome.continueOnSignal(s.payload, "never", 3_600_000);
        held++;
        await released;
        return StepOutcome.succeed(enc("late"));
      }),
    );
    try {
      await env.runtime.group("g").submit([{ key: "a", input: enc("hold") }]);
      await until(() => held === 1, "the member's step runs");
      const member = (await env.runtime.listRuns({ limit: 10 })).runs.find((r) => r.group?.id === "g")!.runId;
      const key = groupMemberKey(Q, groupTag("g"), "a");
      await env.queue.kvPut(key, new Uint8Array(pack({ ...(unpack((await env.queue.kvGet(key))!) as object), state: "lost" })));
      expect((await env.runtime.repairRun(member)).action).toBe("ended_failed");
      await env.runtime.submit({ runId: member, input: enc("wait") });
      await until(async () => (await env.runtime.status(member))?.step === 1, "the new submission waits");
      release();
      await until(async () => (await env.queue.view().stats(Q)).claimed === 0, "the old step settled", 10_000);
      await settle(50);
      expect(await env.runtime.status(member)).toMatchObject({ state: "pending", step: 1 });
    } finally {
      release();
      await env.stop();
    }
  });
});
