/**
 * @module A step's handles kept past their step, as a careless or hostile
 * runner keeps them: `step.children`'s methods taken off their object and
 * called from another run's step after their own step ended, a start left
 * unawaited while the step returns, memo handles written after their step
 * returned, and many steps at once (maxConcurrentSteps > 1) each starting
 * children through their own destructured methods. A kept handle answers
 * for its own step or says clearly that its step ended; it never acts for
 * another run, and nothing hangs.
 */
import { describe, expect, it } from "vitest";
import { type ChildRuns, type Memo, StepOutcome, ValidationError } from "taquba";
import { runKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

describe("a step's handles kept after the step", () => {
  it("a kept children.start called from another run's step is refused naming the step that ended; no child is started", async () => {
    let kept: ChildRuns["start"] | undefined;
    const refusals: unknown[] = [];
    const runner = runnerOf(async (s) => {
      const p = dec(s.payload);
      if (p === "keeper") {
        kept = s.children.start;
        return StepOutcome.continueOnSignal(enc("waiting"), "never-sent", 3_600_000);
      }
      if (p === "user") {
        try {
          await kept!({ input: enc("late-child") });
        } catch (e) {
          refusals.push(e);
        }
        return StepOutcome.succeed(enc("used"));
      }
      return StepOutcome.succeed(enc("child"));
    });
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "keeper", input: enc("keeper") });
    await until(() => kept !== undefined, "the keeper's first step");
    await until(async () => (await env.runtime.status("keeper"))?.step === 1, "the keeper's step settled");
    await env.runtime.submit({ runId: "user", input: enc("user") });
    await env.runtime.wait("user");
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toBeInstanceOf(ValidationError);
    expect((refusals[0] as Error).message).toMatch(/step 0 of run "keeper".*(ended|returned)/);
    // Neither run has a child: the kept method did not act for the keeper from the user's step.
    const runs = await env.runtime.listRuns();
    expect(runs.runs.map((r) => String(r.runId)).sort()).toEqual(["keeper", "user"]);
    await env.runtime.cancel("keeper");
    await env.runtime.wait("keeper");
    await env.stop();
  });

  it("a start left unawaited while the step returns its end starts no child and rejects clearly; the run succeeds", async () => {
    const pending: Promise<unknown>[] = [];
    const runner = runnerOf(async (s) => {
      if (dec(s.payload) === "child") return StepOutcome.succeed(enc("child"));
      // Not awaited: the step ends while the start is in flight.
      pending.push(
        s.children.start({ input: enc("child") }).then(
          (v) => v,
          (e: unknown) => e,
        ),
      );
      return StepOutcome.succeed(enc("parent-done"));
    });
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "p", input: enc("parent") });
    const end = await env.runtime.wait("p");
    expect(end.termination.status).toBe("succeeded");
    const [settled] = await Promise.all(pending);
    // Either the start finished before the step returned (then the run knew its child) or it was refused.
    if (!(settled instanceof Error)) throw new Error(`the start finished after the step returned: ${JSON.stringify(settled)}`);
    expect(settled).toBeInstanceOf(ValidationError);
    expect(settled.message).toMatch(/step 0 of run "p"/);
    const runs = await env.runtime.listRuns();
    expect(runs.runs.map((r) => String(r.runId))).toEqual(["p"]);
    await env.stop();
  });

  it("a memo written after its step returned is not listed in the next step's history", async () => {
    let keptMemo: Memo | undefined;
    let lateWrite: Promise<unknown> | undefined;
    const runner = runnerOf(async (s) => {
      if (s.stepNumber === 0) {
        keptMemo = s.memo;
        await s.memo.memoized("first", async () => enc("a"));
        return StepOutcome.continueNow(enc("next"));
      }
      // The previous step's memo, written while this step runs.
      lateWrite = keptMemo!.memoized("late", async () => enc("b"));
      await lateWrite;
      await s.memo.memoized("second", async () => enc("c"));
      return StepOutcome.succeed(enc("done"));
    });
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "m", input: enc("x") });
    await env.runtime.wait("m");
    await lateWrite;
    const history = await env.runtime.inspectRun("m");
    expect(history!.steps.map((s) => s.memoKeys)).toEqual([["first"], ["second"]]);
    await env.stop();
  });

  it("steps of many runs at once start children through destructured methods: each child is its own parent's", async () => {
    const parents = ["a", "b", "c", "d", "e", "f"];
    let inFlight = 0;
    let release: () => void = () => {};
    const allIn = new Promise<void>((r) => {
      release = r;
    });
    const runner = runnerOf(async (s) => {
      const p = dec(s.payload);
      if (p.startsWith("child:")) return StepOutcome.succeed(enc(`${p.slice(6)}@${s.runId}`));
      const { start, outcome, waitedChild } = s.children;
      if (p === "join") {
        const o = await outcome(s.signal as Uint8Array);
        return StepOutcome.succeed(enc(`${waitedChild()}=${o.status === "succeeded" ? dec(o.result) : o.status}`));
      }
      // Every parent's first step holds its methods until all are in flight.
      if (++inFlight === parents.length) release();
      await allIn;
      const started = await start({ input: enc(`child:${s.runId}`) });
      return StepOutcome.continueOnChild(enc("join"), started.completionKey);
    });
    const env = await openEnv(runner, { configure: (b) => b.maxConcurrentSteps(parents.length) });
    for (const id of parents) await env.runtime.submit({ runId: id, input: enc("parent") });
    for (const id of parents) {
      const end = await env.runtime.wait(id);
      expect(end.termination.status).toBe("succeeded");
      const out = await env.runtime.outcome(id);
      const [child, result] = dec((out as { result: Uint8Array }).result).split("=");
      expect(child).toBe(`${id}-s0-0`);
      expect(result).toBe(`${id}@${id}-s0-0`);
    }
    await env.stop();
  });
});

describe("a step that throws after starting a child", () => {
  it("its retry finds the child the failed delivery started: one child, not started again, the run ends with its result", async () => {
    const starts: { runId: string; newlyStarted: boolean; attempt: number }[] = [];
    const runner = runnerOf(async (s) => {
      const p = dec(s.payload);
      if (p === "child") return StepOutcome.succeed(enc("child-result"));
      if (p === "join") {
        const o = await s.children.outcome(s.signal as Uint8Array);
        return StepOutcome.succeed(o.result ?? enc("none"));
      }
      const started = await s.children.start({ input: enc("child") });
      starts.push({ runId: String(started.runId), newlyStarted: started.newlyStarted, attempt: s.attempt });
      if (s.attempt === 1) throw new Error("failed after starting a child");
      return StepOutcome.continueOnChild(enc("join"), started.completionKey);
    });
    const env = await openEnv(runner, { queueOptions: { queueConfigs: { "workflow-steps": { backoff: { baseMs: 1, maxMs: 1 } } } } });
    await env.runtime.submit({ runId: "t", input: enc("parent") });
    await until(async () => {
      env.clock.advance(5);
      return (await env.runtime.outcome("t")) !== null;
    }, "the parent's end");
    const out = await env.runtime.outcome("t");
    expect(out?.status).toBe("succeeded");
    expect(dec(out?.result)).toBe("child-result");
    expect(starts).toEqual([
      { runId: "t-s0-0", newlyStarted: true, attempt: 1 },
      { runId: "t-s0-0", newlyStarted: false, attempt: 2 },
    ]);
    const runs = await env.runtime.listRuns();
    expect(runs.runs.map((r) => String(r.runId)).sort()).toEqual(["t", "t-s0-0"]);
    await env.stop();
  });
});

describe("a start in flight when its step fails the run", () => {
  it("the start is refused, or the child it made is cancelled with its parent: never left running", async () => {
    let start: Promise<unknown> | undefined;
    const runner = runnerOf(async (s) => {
      if (dec(s.payload) === "child") return StepOutcome.continueOnSignal(enc("waiting"), "never-sent", 3_600_000);
      const key = runKey("workflow-steps", s.runId);
      const before = dec(await s.kv.get(key));
      start = s.children.start({ input: enc("child"), parentClose: "cancel" }).then(
        (v) => v,
        (e: unknown) => e,
      );
      // The start has marked the run as a parent: the step fails while the start goes on.
      await until(async () => dec(await s.kv.get(key)) !== before, "the run marked as a parent");
      return StepOutcome.fail("gave up while a child was starting");
    });
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "f", input: enc("parent") });
    expect((await env.runtime.wait("f")).termination.status).toBe("failed");
    const started = await start;
    if (started instanceof Error) {
      expect(started).toBeInstanceOf(ValidationError);
      expect(started.message).toMatch(/step 0 of run "f" already returned/);
      expect(await env.runtime.status("f-s0-0")).toBeNull();
    } else {
      expect((started as { runId: string }).runId).toBe("f-s0-0");
      await until(async () => (await env.runtime.status("f-s0-0"))?.state === "terminated", "the child's end");
      const child = await env.runtime.status("f-s0-0");
      expect(child?.state === "terminated" && child.status).toBe("cancelled");
    }
    await env.stop();
  });
});

describe("runs cancelled mid-step among steps of other runs", () => {
  it("with six steps at once, the three cancelled see their own signal abort and end cancelled; the others succeed untouched", async () => {
    const ids = ["r0", "r1", "r2", "r3", "r4", "r5"];
    const cancelled = new Set(["r1", "r3", "r4"]);
    const aborted: string[] = [];
    let inFlight = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let allIn: () => void = () => {};
    const everyoneIn = new Promise<void>((r) => {
      allIn = r;
    });
    const runner = runnerOf(async (s) => {
      const signal = s.cancelSignal;
      signal.addEventListener("abort", () => aborted.push(s.runId));
      if (++inFlight === ids.length) allIn();
      await gate;
      // The runner goes on as if nothing happened: the cancel decides the end, not this outcome.
      return StepOutcome.succeed(enc(`done ${s.runId}`));
    });
    const env = await openEnv(runner, { configure: (b) => b.maxConcurrentSteps(ids.length) });
    for (const id of ids) await env.runtime.submit({ runId: id, input: enc("x") });
    await everyoneIn;
    for (const id of cancelled) expect(await env.runtime.cancel(id)).toBe(true);
    await until(() => aborted.length === cancelled.size, "the cancelled steps' signals");
    expect([...aborted].sort()).toEqual([...cancelled].sort());
    release();
    for (const id of ids) {
      const end = await env.runtime.wait(id);
      expect(end.termination.status, id).toBe(cancelled.has(id) ? "cancelled" : "succeeded");
      if (!cancelled.has(id)) expect(dec(end.outcome?.result)).toBe(`done ${id}`);
    }
    await env.stop();
  });
});
