/**
 * @module `repairRun` of a parent whose step is claimed and running and has
 * started child runs before the repair ended the run: the step's own
 * settlement is dropped (it finds the run ended), so the children must be
 * settled by the repaired end as any end settles them (a `cancel` child
 * cancelled, an `abandon` child left to run on and end), and a start the
 * step makes after the repair must start nothing. No child may be left
 * running for a parent that ended, nor the parent ended twice.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, StepOutcome } from "taquba";
import { childEntryKey, childrenPrefix, runKey, SIGNAL_BUF_PREFIX } from "../../runtime/workflow/records/kv-keys.js";
import { damage } from "../workflow/run-records.js";
import { dec, enc, openEnv, recordingHook, runnerOf, settle, until } from "../workflow/helpers.js";

const Q = "workflow-steps";

describe("repairRun of a parent whose running step started children", () => {
  it.each([false, true])("its children are settled by the repaired end (remove: %s); a start after the repair starts nothing", async (remove) => {
    const hook = recordingHook();
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const ids: Record<string, string> = {};
    let lateStart: unknown;
    const env = await openEnv(
      runnerOf(async (s) => {
        const p = dec(s.payload);
        // A child waits for a signal that never comes, then returns.
        if (p === "child")
          return s.stepNumber === 0 ? StepOutcome.continueOnSignal(s.payload, `never-${s.runId}`, 3_600_000) : StepOutcome.succeed(enc("done"));
        ids.cancelled = (await s.children.start({ input: enc("child"), key: "c", parentClose: "cancel" })).runId;
        ids.abandoned = (await s.children.start({ input: enc("child"), key: "a", parentClose: "abandon" })).runId;
        await released;
        // The delivery outlived its run: its start is refused, and so is its settlement.
        try {
          await s.children.start({ input: enc("child"), key: "late" });
        } catch (e) {
          lateStart = e;
        }
        return StepOutcome.continueOnChild(enc("join"), `workflow.child/${s.runId}/${ids.cancelled}`, 3_600_000);
      }),
      { hook },
    );
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(() => ids.abandoned !== undefined, "the parent's step started its children");
      await until(
        async () => (await env.runtime.status(ids.cancelled!))?.step === 1 && (await env.runtime.status(ids.abandoned!))?.step === 1,
        "both children wait",
      );
      await damage(env, runKey(Q, "p"), { priority: -1 });
      const out = await env.runtime.repairRun("p", remove ? { remove: true } : {});
      expect(out.action).toBe(remove ? "removed" : "ended_failed");
      // The cancel child ends with its parent; the abandon child runs on.
      expect((await env.runtime.wait(ids.cancelled!)).termination.status).toBe("cancelled");
      expect(await env.runtime.status(ids.abandoned!)).toMatchObject({ state: "pending", step: 1 });
      release();
      await until(() => lateStart !== undefined, "the late start answered");
      expect(lateStart).toBeInstanceOf(ClaimLostError);
      await until(async () => (await env.queue.view().stats(Q)).claimed === 0, "the step settled", 10_000);
      await settle(50);
      // Nothing started after the repair, and no entry is left under the parent.
      expect((await env.queue.kvScan(childrenPrefix(Q, "p"), { limit: 10 })).entries.map((e) => e.key)).toEqual([]);
      expect(await env.queue.kvGet(childEntryKey(Q, "p", ids.cancelled!))).toBeNull();
      expect((await env.runtime.listRuns({ limit: 100 })).runs.map((r) => r.runId).sort()).toEqual(
        [ids.abandoned!, ...(remove ? [] : ["p"]), ids.cancelled!].sort(),
      );
      // The parent ended once (the hook told once), failed, and stays so (or stays removed).
      expect(hook.seen.filter((o) => o.runId === "p").map((o) => o.status)).toEqual(["failed"]);
      if (remove) expect(await env.runtime.status("p")).toBeNull();
      else expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      // The abandoned child ends on its own once signalled, its end answered to nobody and no error logged.
      await env.runtime.signal(`never-${ids.abandoned}`, enc("go"));
      expect((await env.runtime.wait(ids.abandoned!)).termination.status).toBe("succeeded");
      await until(async () => (await env.queue.view().stats(Q)).pending === 0 && (await env.queue.view().stats(Q)).claimed === 0, "its end's jobs ran", 10_000);
      expect((await env.queue.view().stats(Q)).dead ?? 0).toBe(0);
      // No child end is left buffered for the parent that no step of it will read.
      const buffered = (await env.queue.kvScan(SIGNAL_BUF_PREFIX, { limit: 100 })).entries.map((e) => e.key);
      expect(buffered.filter((k) => k.includes("workflow.child/p/"))).toEqual([]);
      expect(env.logged).toEqual([]);
    } finally {
      release();
      await env.stop();
    }
  });
});
