/**
 * @module Redrive: `retryRun` re-opens a failed or cancelled run at the step
 * it ended at (or an earlier one) with that step's payload, keeping its
 * memo; a dead step requeued through the queue re-opens its run too; bad
 * requests are typed errors that change nothing; restarts in between.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, RunNotFoundError, RunNotRetryableError, StepError, StepOutcome, ValidationError, type Step, type StepRunner } from "taquba";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";

const HOUR = 3_600_000;

/**
 * Three steps. Step 0 memoizes a "charge" (counted in `charges`); the
 * step named in `failing` fails the way `mode` says until `fixed` is set.
 */
function shop(state: { fixed: boolean; charges: number; mode: "fail" | "permanent" | "transient"; failing: number; runs: number[] }): StepRunner {
  return {
    async runStep(s: Step) {
      state.runs.push(s.stepNumber);
      if (s.stepNumber === 0) {
        await s.memo.memoized("charge", async () => {
          state.charges++;
          return "charged";
        });
      }
      if (s.stepNumber === state.failing && !state.fixed) {
        if (state.mode === "fail") return StepOutcome.fail("bug in step");
        if (state.mode === "permanent") throw StepError.permanent(new Error("permanent bug"));
        throw new Error("transient bug");
      }
      if (s.stepNumber < 2) return StepOutcome.continueNow(enc(`${dec(s.payload)}>${s.stepNumber + 1}`));
      return StepOutcome.succeed(enc(`${dec(s.payload)}|${await s.runMemo.get("note").then(dec)}`));
    },
  };
}

const newState = (mode: "fail" | "permanent" | "transient", failing = 2) => ({ fixed: false, charges: 0, mode, failing, runs: [] as number[] });

async function ended(env: Env, runId: string): Promise<void> {
  await until(async () => (await env.runtime.status(runId))?.state === "terminated", `${runId} ended`);
}

describe("retryRun", () => {
  for (const mode of ["fail", "permanent", "transient"] as const) {
    it(`re-opens a run that failed (${mode}) at its failed step with its payload, keeping the memo`, async () => {
      const state = newState(mode);
      const env = await openEnv(shop(state), { queueOptions: { queueConfigs: { "workflow-steps": { maxAttempts: 1 } } } });
      await env.runtime.submit({ runId: "o1", input: enc("in") });
      await ended(env, "o1");
      expect((await env.runtime.outcome("o1"))?.status ?? (await env.runtime.status("o1"))?.state).toBe("failed");
      state.fixed = true;
      state.runs = [];
      const out = await env.runtime.retryRun("o1");
      expect(out).toMatchObject({ runId: "o1", step: 2 });
      const end = await env.runtime.wait("o1");
      expect(end.termination.status).toBe("succeeded");
      expect(dec(end.outcome!.result)).toBe("in>1>2|null");
      // Only the failed step ran again; step 0's memoized charge happened once.
      expect(state.runs).toEqual([2]);
      expect(state.charges).toBe(1);
      const h = await env.runtime.inspectRun("o1");
      expect(h!.redrives).toHaveLength(1);
      expect(h!.redrives[0]).toMatchObject({ step: 2, replaced: { status: "failed", finalStep: 2 } });
      expect(h!.end).toMatchObject({ status: "succeeded", finalStep: 2 });
      expect(h!.steps.map((s) => s.step)).toEqual([0, 1, 2]);
      expect((await env.runtime.listRuns({ state: "failed" })).runs).toEqual([]);
      expect((await env.runtime.listRuns({ state: "succeeded" })).runs.map((r) => r.runId)).toEqual(["o1"]);
      expect(await env.queue.view().deadJobs("workflow-steps")).toEqual([]);
      await env.stop();
    });
  }

  it("with step output replay on, the re-opened steps run again instead of replaying how they ended", async () => {
    const state = newState("fail");
    const env = await openEnv(shop(state), { configure: (b) => b.stepOutputReplay() });
    await env.runtime.submit({ runId: "r1", input: enc("in") });
    await ended(env, "r1");
    state.fixed = true;
    state.runs = [];
    await env.runtime.retryRun("r1", { fromStep: 1 });
    expect((await env.runtime.wait("r1")).termination.status).toBe("succeeded");
    expect(state.runs).toEqual([1, 2]);
    await env.stop();
  });

  it("re-opens at an earlier step (fromStep) and runs the later ones again", async () => {
    const state = newState("fail");
    const env = await openEnv(shop(state));
    await env.runtime.submit({ runId: "o2", input: enc("in") });
    await ended(env, "o2");
    state.fixed = true;
    state.runs = [];
    expect(await env.runtime.retryRun("o2", { fromStep: 1 })).toMatchObject({ step: 1 });
    expect(dec((await env.runtime.wait("o2")).outcome!.result)).toBe("in>1>2|null");
    expect(state.runs).toEqual([1, 2]);
    expect(state.charges).toBe(1);
    await env.stop();
  });

  it("re-opens a cancelled run at the step it was cancelled at", async () => {
    const runner: StepRunner = {
      async runStep(s) {
        if (s.stepNumber === 0) return StepOutcome.continueOnSignal(enc("waiting"), "k1", HOUR);
        return StepOutcome.succeed(enc(`${dec(s.payload)}:${s.signal === undefined ? "no signal" : dec(s.signal)}`));
      },
    };
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "c1", input: enc("x") });
    await until(async () => (await env.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "c1 waiting");
    expect(await env.runtime.cancel("c1")).toBe(true);
    expect((await env.runtime.wait("c1")).termination.status).toBe("cancelled");
    expect(await env.runtime.retryRun("c1")).toMatchObject({ step: 1 });
    // The step waits for its signal again, as the step before chose.
    await until(async () => (await env.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "c1 waiting again");
    expect(await env.runtime.signal("k1", enc("go"))).toBe("delivered");
    const end = await env.runtime.wait("c1");
    expect(dec(end.outcome!.result)).toBe("waiting:go");
    await env.stop();
  });

  it("refuses what cannot be retried with a typed error and changes nothing", async () => {
    const big = new Uint8Array(10_000).fill(65);
    const runner: StepRunner = {
      async runStep(s) {
        if (dec(s.payload) === "ok") return StepOutcome.succeed(enc("ok"));
        if (s.stepNumber === 0) return StepOutcome.continueNow(big);
        return StepOutcome.fail("no");
      },
    };
    const env = await openEnv(runner, { start: false });
    await env.runtime.submit({ runId: "p1", input: enc("x") });
    await expect(env.runtime.retryRun("p1")).rejects.toMatchObject({ reason: "active" });
    await expect(env.runtime.retryRun("p1")).rejects.toBeInstanceOf(RunNotRetryableError);
    await expect(env.runtime.retryRun("nope")).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(env.runtime.retryRun("bad id!")).rejects.toThrow(/run id/);
    for (const fromStep of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e30, "1"]) {
      await expect(env.runtime.retryRun("p1", { fromStep } as never), String(fromStep)).rejects.toBeInstanceOf(ValidationError);
    }
    const worker = env.runtime.spawn();
    await ended(env, "p1");
    await env.runtime.submit({ runId: "s1", input: enc("ok") });
    await ended(env, "s1");
    await worker.shutdown();
    // p1 failed at step 1; its payload (10 kB) is kept as the last step's, not as step 0's next.
    await expect(env.runtime.retryRun("p1", { fromStep: 2 })).rejects.toMatchObject({ reason: "no_such_step" });
    const before = await env.runtime.inspectRun("p1");
    expect(before!.steps.map((s) => s.retryable)).toEqual([true, true]);
    await expect(env.runtime.retryRun("s1")).rejects.toMatchObject({ reason: "succeeded" });
    expect(await env.runtime.inspectRun("p1")).toEqual(before);
    expect((await env.runtime.retryRun("p1")).step).toBe(1);
    await env.stop();
  });

  it("refuses a step whose payload was too large to keep", async () => {
    const big = new Uint8Array(10_000).fill(65);
    const runner: StepRunner = {
      async runStep(s) {
        if (s.stepNumber < 2) return StepOutcome.continueNow(s.stepNumber === 0 ? big : enc("small"));
        return StepOutcome.fail("no");
      },
    };
    const env = await openEnv(runner);
    await env.runtime.submit({ runId: "p2", input: enc("x") });
    await ended(env, "p2");
    // Step 1 ran with 10 kB: step 0 did not keep it as its next payload.
    await expect(env.runtime.retryRun("p2", { fromStep: 1 })).rejects.toMatchObject({ reason: "payload_not_kept" });
    expect((await env.runtime.inspectRun("p2"))!.steps.map((s) => s.retryable)).toEqual([true, false, true]);
    expect((await env.runtime.retryRun("p2", { fromStep: 0 })).step).toBe(0);
    await env.stop();
  });
});

describe("a redriven step that waited for a signal", () => {
  /** Step 0 waits on `key`; step 1 reports the signal it saw, failing (as `mode` says) until `fixed`. */
  function waiter(key: string, state: { fixed: boolean; mode: "fail" | "permanent"; seen: string[] }): StepRunner {
    return {
      async runStep(s) {
        if (s.stepNumber === 0) return StepOutcome.continueOnSignal(enc("waiting"), key, HOUR);
        const seen = s.signal === undefined ? "no signal" : s.signal === null ? "timed out" : dec(s.signal);
        state.seen.push(seen);
        if (!state.fixed) {
          if (state.mode === "fail") return StepOutcome.fail("bug after the signal");
          throw StepError.permanent(new Error("bug after the signal"));
        }
        return StepOutcome.succeed(enc(seen));
      },
    };
  }

  it("retryRun hands a step woken by a signal the same signal, from the step or the one before", async () => {
    const state = { fixed: false, mode: "fail" as const, seen: [] as string[] };
    const env = await openEnv(waiter("pay:1", state));
    await env.runtime.submit({ runId: "w1", input: enc("x") });
    await until(async () => (await env.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "w1 waiting");
    expect(await env.runtime.signal("pay:1", enc("paid"))).toBe("delivered");
    expect((await env.runtime.wait("w1")).termination.status).toBe("failed");
    expect((await env.runtime.inspectRun("w1"))!.steps[1]!.signal).toEqual({ key: "pay:1", result: "delivered", payloadBytes: 4 });
    await env.runtime.retryRun("w1");
    expect((await env.runtime.wait("w1")).termination.status).toBe("failed");
    state.fixed = true;
    await env.runtime.retryRun("w1", { fromStep: 1 });
    expect(dec((await env.runtime.wait("w1")).outcome!.result)).toBe("paid");
    expect(state.seen).toEqual(["paid", "paid", "paid"]);
    const steps = (await env.runtime.inspectRun("w1"))!.steps;
    expect(steps[1]!.signal).toEqual({ key: "pay:1", result: "delivered", payloadBytes: 4 });
    await env.stop();
  });

  it("a dead step that took a buffered signal sees it again when requeued, by retryRun or through the queue", async () => {
    const state = { fixed: false, mode: "permanent" as const, seen: [] as string[] };
    const env = await openEnv(waiter("pay:2", state));
    // Sent before the run waits: buffered, then handed over when the wait registers.
    expect(await env.runtime.signal("pay:2", enc("early"))).toBe("buffered");
    await env.runtime.submit({ runId: "w2", input: enc("x") });
    expect((await env.runtime.wait("w2")).termination.errorKind).toBe("permanent");
    await env.runtime.retryRun("w2");
    await until(async () => state.seen.length === 2, "w2 ran again");
    await ended(env, "w2");
    expect(await env.runtime.status("w2")).toMatchObject({ state: "terminated", status: "failed" });
    state.fixed = true;
    const [dead] = await env.queue.view().deadJobs("workflow-steps");
    expect(await env.queue.requeueDead(dead!.id)).toBe(true);
    await waitAgain(env, "w2");
    expect(dec((await env.runtime.outcome("w2"))!.result)).toBe("early");
    expect(state.seen).toEqual(["early", "early", "early"]);
    await env.stop();
  });

  it("a step that timed out waits for its signal again", async () => {
    const state = { fixed: false, mode: "fail" as const, seen: [] as string[] };
    const env = await openEnv(waiter("pay:3", state));
    await env.runtime.submit({ runId: "w3", input: enc("x") });
    await until(async () => (await env.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "w3 waiting");
    env.clock.advance(HOUR);
    expect((await env.runtime.wait("w3")).termination.status).toBe("failed");
    state.fixed = true;
    await env.runtime.retryRun("w3");
    await until(async () => (await env.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "w3 waiting again");
    expect(await env.runtime.signal("pay:3", enc("late"))).toBe("delivered");
    expect(dec((await env.runtime.wait("w3")).outcome!.result)).toBe("late");
    expect(state.seen).toEqual(["timed out", "late"]);
    await env.stop();
  });

  it("refuses to wait again on a key another run waits on, and changes nothing", async () => {
    const state = { fixed: true, mode: "fail" as const, seen: [] as string[] };
    const env = await openEnv(waiter("pay:4", state));
    await env.runtime.submit({ runId: "b", input: enc("x") });
    await until(async () => (await env.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "b waiting");
    expect(await env.runtime.cancel("b")).toBe(true);
    await ended(env, "b");
    await env.runtime.submit({ runId: "a", input: enc("x") });
    await until(async () => (await env.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "a waiting");
    const err = await env.runtime.retryRun("b").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunNotRetryableError);
    expect(err).toMatchObject({ reason: "signal_key_taken" });
    expect((err as Error).message).toContain('waits for signal "pay:4"');
    expect(await env.runtime.status("b")).toMatchObject({ state: "terminated", status: "cancelled" });
    expect(await env.runtime.signal("pay:4", enc("for a"))).toBe("delivered");
    expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("for a");
    await env.stop();
  });
});

describe("a dead step requeued through the queue", () => {
  it("re-opens its run, and the run's new end replaces the failure, across a restart", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const state = newState("permanent");
    const first = await openEnv(shop(state), { store, clock });
    await first.runtime.submit({ runId: "d1", input: enc("in") });
    await ended(first, "d1");
    const [dead] = await first.queue.view().deadJobs("workflow-steps");
    expect(dead).toBeDefined();
    // The operator requeues the dead step while no worker runs, and the process dies.
    await first.worker!.shutdown();
    expect(await first.queue.requeueDead(dead!.id)).toBe(true);
    await first.queue.close();

    state.fixed = true;
    const second = await openEnv(shop(state), { store, clock });
    const end = await waitAgain(second, "d1");
    expect(end.termination.status).toBe("succeeded");
    expect((await second.runtime.outcome("d1"))?.status).toBe("succeeded");
    expect(state.charges).toBe(1);
    expect((await second.runtime.inspectRun("d1"))!.redrives).toHaveLength(1);
    await second.stop();
  });
});

/** Waits until the run's terminal record is no longer the failure it had. */
async function waitAgain(env: Env, runId: string) {
  await until(
    async () => (await env.runtime.status(runId))?.state === "terminated" && (await env.runtime.outcome(runId))?.status === "succeeded",
    `${runId} succeeded`,
  );
  return env.runtime.wait(runId);
}
