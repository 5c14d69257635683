/**
 * @module A step still running when its run is removed
 * (`repairRun(id, { remove: true, endActive: true })`: the claimed step is
 * asked to stop, the run ended, its memo cleared and its records removed)
 * writes memo entries afterwards, to its step memo and the run memo. None
 * may stay: with no run left, nothing would ever clear them. Written after
 * the removal's last commit, each is deleted again by the write itself;
 * written between the removal's first memo clear and that commit, the
 * removal's clear after the commit takes it.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type Queue, type Step } from "taquba";
import { runKey } from "../../runtime/workflow/records/kv-keys.js";
import { enc, type Env, openEnv, runnerOf, until } from "./helpers.js";
import { gate } from "../support/gate.js";

const Q = "workflow-steps";

/** The object keys of run "r"'s memo entries, replay records and result, on any memo prefix. */
async function memoObjectsOfR(env: Env): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of env.store.list(""))
    if (/\/(memos|step-outputs|run-results)\//.test(o.key) && /\/(memos|step-outputs)\/r\//.test(o.key)) keys.push(o.key);
  return keys;
}

/** Step 0 stores "early" in the run memo, then waits for `held` and stores "late" in both memos; `wrote` opens after. */
function lateWriter(started: { open(): void }, held: Promise<void>, wrote: { open(): void }) {
  return runnerOf(async (s: Step) => {
    await s.runMemo.memoized("early", async () => "e");
    started.open();
    await held;
    await s.runMemo.memoized("late", async () => "l");
    await s.memo.memoized("late-step", async () => "ls");
    wrote.open();
    return StepOutcome.succeed(enc("done"));
  });
}

/** Waits until no step job of the step queue is claimed (the stopped step settled). */
async function stepSettled(env: Env): Promise<void> {
  await until(async () => {
    const stats = await env.queue.view().stats(Q);
    return stats.claimed === 0 && stats.pending === 0;
  }, "the step settled");
}

describe("a step outliving its run's removal", () => {
  it("leaves no memo entry it wrote after the removal", async () => {
    const [started, held, wrote] = [gate(), gate(), gate()];
    const env = await openEnv(lateWriter(started, held.opened, wrote));
    try {
      await env.runtime.submit({ runId: "r", input: enc("0") });
      await started.opened;
      expect((await memoObjectsOfR(env)).length).toBe(1);
      const out = await env.runtime.repairRun("r", { remove: true, endActive: true });
      expect(out).toMatchObject({ action: "removed", dryRun: false });
      expect(await memoObjectsOfR(env)).toEqual([]);
      held.open();
      await wrote.opened;
      await stepSettled(env);
      expect(await memoObjectsOfR(env)).toEqual([]);
      expect(await env.runtime.status("r")).toBeNull();
    } finally {
      held.open();
      await env.stop();
    }
  });

  it("leaves no memo entry it wrote between the removal's memo clear and its last commit", async () => {
    const [started, held, wrote] = [gate(), gate(), gate()];
    let armed = false;
    // At the removal's last commit (it expects no run record), the step writes first, and asks whether the run keeps it.
    const atRemovalCommit = (queue: Queue): Queue =>
      new Proxy(queue, {
        get(t, name) {
          if (name === "kvCompareAndApply")
            return async (...args: Parameters<Queue["kvCompareAndApply"]>) => {
              if (armed && args[0].some((e) => e.key === runKey(Q, "r") && e.value === null)) {
                armed = false;
                held.open();
                await wrote.opened;
              }
              return t.kvCompareAndApply(...args);
            };
          const v = Reflect.get(t, name, t) as unknown;
          return typeof v === "function" ? v.bind(t) : v;
        },
      });
    const env = await openEnv(lateWriter(started, held.opened, wrote), { wrapQueue: atRemovalCommit });
    try {
      await env.runtime.submit({ runId: "r", input: enc("0") });
      await started.opened;
      armed = true;
      expect(await env.runtime.repairRun("r", { remove: true, endActive: true })).toMatchObject({ action: "removed" });
      expect(armed).toBe(false);
      await stepSettled(env);
      expect(await memoObjectsOfR(env)).toEqual([]);
    } finally {
      held.open();
      await env.stop();
    }
  });

  it("keeps what a step of a live run writes, and what a cancelled run's step wrote for its retry", async () => {
    const [started, held, wrote] = [gate(), gate(), gate()];
    const env = await openEnv(lateWriter(started, held.opened, wrote));
    try {
      await env.runtime.submit({ runId: "r", input: enc("0") });
      await started.opened;
      await env.runtime.cancel("r");
      held.open();
      await wrote.opened;
      await stepSettled(env);
      expect((await env.runtime.wait("r")).termination.status).toBe("cancelled");
      expect((await memoObjectsOfR(env)).length).toBe(3);
    } finally {
      held.open();
      await env.stop();
    }
  });
});
