/**
 * @module `repairRun(id, { remove: true })`: a damaged run's records go
 * (run record, step pointer, end record, listing entries, history, memo),
 * after the run is ended as the repair ends it, so its parent and children
 * are answered as for any end; a healthy active run is refused unless
 * `endActive`; a dry run writes nothing; other runs are untouched.
 */
import { describe, expect, it } from "vitest";
import { RunNotDamagedError, StepOutcome, ValidationError } from "taquba";
import { HISTORY_PREFIX, runKey, stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { RUN_INDEX_PREFIX } from "../../runtime/workflow/runs/run-index.js";
import { dec, enc, type Env, openEnv, runnerOf, until } from "./helpers.js";
import { damage, keysOf } from "./run-records.js";

const Q = "workflow-steps";

/** `child` waits an hour for a signal; `parent` starts child "c" and joins its end; `wait` waits; anything else succeeds. */
function runner(started: Map<string, string>) {
  return runnerOf(async (s) => {
    const p = dec(s.payload);
    if (p === "child" || p === "wait")
      return s.stepNumber === 0 ? StepOutcome.continueOnSignal(s.payload, `never-${s.runId}`, 3_600_000) : StepOutcome.succeed(enc("done"));
    if (p === "join") {
      const o = await s.children.outcome(s.signal as Uint8Array);
      return StepOutcome.succeed(enc(`${o.status}:${o.error ?? ""}`));
    }
    if (p === "parent") {
      const child = await s.children.start({ input: enc("child"), key: "c" });
      started.set(s.runId, child.runId);
      return StepOutcome.continueOnChild(enc("join"), child.completionKey, 3_600_000);
    }
    return StepOutcome.succeed(s.payload);
  });
}

async function listedIds(env: Env): Promise<string[]> {
  const ids: string[] = [];
  for (const state of [undefined, "failed", "succeeded", "cancelled", "pending", "awaiting_signal"] as const) {
    const page = await env.runtime.listRuns({ limit: 1000, ...(state === undefined ? {} : { state }) });
    ids.push(...page.runs.map((r) => r.runId));
    expect(page.unreadable ?? []).toEqual([]);
  }
  return ids;
}

describe("repairRun with remove", () => {
  it("removes a damaged parent: it ends first, its child is cancelled, its records go, the other run stays", async () => {
    const started = new Map<string, string>();
    const env = await openEnv(runner(started));
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await env.runtime.submit({ runId: "other", input: enc("wait") });
      await until(async () => (await env.runtime.status("p"))?.step === 1, "the parent waiting for its child");
      const child = started.get("p")!;
      await until(async () => (await env.runtime.status(child))?.step === 1, "the child waiting");
      await damage(env, runKey(Q, "p"), { priority: -1 });
      // Its listing entries (time, name, and none ended yet), its history, its run record and step pointer.
      expect((await keysOf(env, "p")).filter((k) => k.startsWith(RUN_INDEX_PREFIX) || k.startsWith(HISTORY_PREFIX)).length).toBeGreaterThanOrEqual(2);

      const plan = await env.runtime.repairRun("p", { remove: true, dryRun: true });
      expect(plan).toMatchObject({ action: "removed", dryRun: true, damaged: [{ record: "run_record" }] });
      expect(plan.removed).toEqual(expect.arrayContaining([expect.stringMatching(/run record and step pointer/), expect.stringMatching(/history entr/)]));
      await expect(env.runtime.status("p")).rejects.toThrow(/step priority of -1/);

      const out = await env.runtime.repairRun("p", { remove: true });
      expect(out).toMatchObject({ action: "removed", dryRun: false, damaged: [{ record: "run_record" }] });
      expect(await env.runtime.status("p")).toBeNull();
      expect(await keysOf(env, "p")).toEqual([]);
      expect((await env.runtime.wait(child)).termination.status).toBe("cancelled");
      expect(await listedIds(env)).not.toContain("p");
      expect(await env.runtime.status("other")).toMatchObject({ state: "pending", step: 1 });
      await expect(env.runtime.repairRun("p", { remove: true })).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    } finally {
      await env.stop();
    }
  });

  it("removes a damaged child, whose end its waiting parent joins as failed", async () => {
    const started = new Map<string, string>();
    const env = await openEnv(runner(started));
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(async () => (await env.runtime.status("p"))?.step === 1, "the parent waiting for its child");
      const child = started.get("p")!;
      await until(async () => (await env.runtime.status(child))?.step === 1, "the child waiting");
      await damage(env, stepPointerKey(Q, child), { step: -1 });
      await env.runtime.repairRun(child, { remove: true });
      expect(await env.runtime.status(child)).toBeNull();
      expect(await keysOf(env, child)).toEqual([]);
      const end = await env.runtime.wait("p");
      expect(dec(end.outcome!.result)).toMatch(/^failed:repaired by an operator: its step pointer was damaged/);
      expect(await listedIds(env)).not.toContain(child);
    } finally {
      await env.stop();
    }
  });

  it("refuses a healthy active run unless endActive, and removes an ended one", async () => {
    const env = await openEnv(runner(new Map()));
    try {
      await env.runtime.submit({ runId: "w", input: enc("wait") });
      await env.runtime.submit({ runId: "done", input: enc("plain") });
      await until(async () => (await env.runtime.status("w"))?.step === 1, "the run waiting");
      await env.runtime.wait("done");
      const before = await keysOf(env, "w");
      const refused = await env.runtime.repairRun("w", { remove: true }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RunNotDamagedError);
      expect(refused).toMatchObject({ reason: "active_kept", message: expect.stringMatching(/run "w" was not removed: it is active.*--end-active/) });
      expect(await keysOf(env, "w")).toEqual(before);
      await expect(env.runtime.repairRun("w", { endActive: true })).rejects.toThrow(ValidationError);
      await expect(env.runtime.repairRun("w", { remove: true, endActive: "yes" } as never)).rejects.toThrow(/endActive must be true or false/);

      expect(await env.runtime.repairRun("w", { remove: true, endActive: true })).toMatchObject({ action: "removed", damaged: [] });
      expect(await env.runtime.status("w")).toBeNull();
      expect(await keysOf(env, "w")).toEqual([]);
      expect(await env.runtime.repairRun("done", { remove: true })).toMatchObject({ action: "removed", damaged: [] });
      expect(await keysOf(env, "done")).toEqual([]);
      expect(await listedIds(env)).toEqual([]);
      // The id is free again: a new run under it runs from the start.
      await env.runtime.submit({ runId: "done", input: enc("again") });
      expect(dec((await env.runtime.wait("done")).outcome!.result)).toBe("again");
    } finally {
      await env.stop();
    }
  });
});
