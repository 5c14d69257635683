/**
 * @module `repairRun` of a parent and of a child run (see runs/repair):
 * the repaired run ends failed through the same terminating effects a
 * cancel commits, so a repaired parent's running child is cancelled (its
 * parent-close policy) and a repaired child's end reaches its waiting
 * parent, which joins it as failed. A damaged record whose run is not
 * repaired stays as it is.
 */
import { pack, unpack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { runKey, stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, type Env, openEnv, runnerOf, until } from "./helpers.js";

const Q = "workflow-steps";

/** Parents start child "c", which waits for a signal an hour, and join its end. */
function parents(started: Map<string, string>) {
  return runnerOf(async (s) => {
    const p = dec(s.payload);
    if (p === "child")
      return s.stepNumber === 0 ? StepOutcome.continueOnSignal(enc("child"), `never-${s.runId}`, 3_600_000) : StepOutcome.succeed(enc("child done"));
    if (p === "join") {
      const o = await s.children.outcome(s.signal as Uint8Array);
      return StepOutcome.succeed(enc(`${o.status}:${o.errorKind ?? ""}:${o.error ?? ""}`));
    }
    const child = await s.children.start({ input: enc("child"), key: "c" });
    started.set(s.runId, child.runId);
    return StepOutcome.continueOnChild(enc("join"), child.completionKey, 3_600_000);
  });
}

/** A runtime whose parent "p" waits for its child, which waits for its signal; and the child's run id. */
async function parentWaitingOnChild(): Promise<{ env: Env; child: string }> {
  const started = new Map<string, string>();
  const env = await openEnv(parents(started));
  try {
    await env.runtime.submit({ runId: "p", input: enc("parent") });
    await until(async () => (await env.runtime.status("p"))?.step === 1, "the parent waiting for its child");
    const child = started.get("p")!;
    await until(async () => (await env.runtime.status(child))?.step === 1, "the child waiting for its signal");
    return { env, child };
  } catch (e) {
    await env.stop();
    throw e;
  }
}

async function damage(env: Env, key: string, change: Record<string, unknown>): Promise<void> {
  const bytes = await env.queue.kvGet(key);
  expect(bytes, key).not.toBeNull();
  await env.queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
}

describe("repairRun of runs with children and parents", () => {
  it("a repaired parent ends failed and its running child is cancelled", async () => {
    const { env, child } = await parentWaitingOnChild();
    try {
      await damage(env, runKey(Q, "p"), { priority: -1 });
      await expect(env.runtime.status("p")).rejects.toThrow(/step priority of -1/);
      expect(await env.runtime.repairRun("p")).toMatchObject({ action: "ended_failed", damaged: [{ record: "run_record" }] });
      expect((await env.runtime.wait("p")).termination).toMatchObject({
        status: "failed",
        finalStep: 1,
        error: expect.stringMatching(/^repaired by an operator/),
      });
      expect((await env.runtime.wait(child)).termination.status).toBe("cancelled");
    } finally {
      await env.stop();
    }
  });

  it("a repaired child's end reaches its parent, which joins it as failed", async () => {
    const { env, child } = await parentWaitingOnChild();
    try {
      await damage(env, stepPointerKey(Q, child), { step: -1 });
      expect(await env.runtime.repairRun(child, { dryRun: true })).toMatchObject({ dryRun: true, damaged: [{ record: "step_pointer" }] });
      await expect(env.runtime.status(child)).rejects.toThrow(/holds step -1/);
      // A wait pending when the repair commits is answered by its end (the mock clock runs no poll round, which would decode the damage).
      const childWait = env.runtime.wait(child);
      await env.runtime.repairRun(child);
      expect((await childWait).termination).toMatchObject({ status: "failed", error: expect.stringMatching(/^repaired by an operator/) });
      const end = await env.runtime.wait("p");
      expect(dec(end.outcome!.result)).toMatch(/^failed:permanent:repaired by an operator: its step pointer was damaged/);
      expect(env.logged).toEqual([]);
    } finally {
      await env.stop();
    }
  });
});
