/**
 * @module Cancelling runs: pending, delayed and running steps, runners that
 * ignore the request or cancel themselves, a step claimed after the request,
 * and a restart.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepError, StepOutcome } from "taquba";
import { dec, enc, openEnv, recordingHook, runnerOf, settle, until } from "./helpers.js";

describe("cancellation", () => {
  it("removes a pending step and terminates the run before returning", async () => {
    const hook = recordingHook();
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false, hook },
    );
    const sub = await env.runtime.submit({ input: enc("x"), runId: "p" });
    expect(await env.runtime.cancel("p")).toBe(true);
    expect(await env.queue.view().job(sub.jobId)).toBeNull();
    expect(await env.runtime.status("p")).toMatchObject({ state: "terminated", status: "cancelled", errorKind: "cancelled", step: 0 });
    // Terminated without a worker: the outcome is the termination.
    expect(await env.runtime.outcome("p")).toEqual({ runId: "p", status: "cancelled", errorKind: "cancelled", finalStep: 0, headers: {} });
    const notification = (await env.queue.view().listJobs("workflow-steps", "pending")).items;
    expect(notification).toHaveLength(1);
    expect(notification[0]!.headers["workflow.terminal"]).toBe("1");
    expect(await env.runtime.cancel("p")).toBe(false);
    expect(await env.runtime.cancel("never")).toBe(false);
    const worker = env.runtime.spawn();
    await until(() => hook.seen.length === 1, "hook");
    expect(hook.seen[0]).toMatchObject({ runId: "p", status: "cancelled", finalStep: 0 });
    await worker.shutdown();
    await env.stop();
  });

  it("removes a scheduled (delayed) step", async () => {
    const env = await openEnv(runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 3_600_000) : StepOutcome.succeed(s.payload))));
    await env.runtime.submit({ input: enc("x"), runId: "s" });
    await until(async () => (await env.runtime.status("s"))?.step === 1, "scheduled");
    expect(await env.runtime.cancel("s")).toBe(true);
    expect((await env.runtime.wait("s")).termination).toMatchObject({ status: "cancelled", finalStep: 1 });
    expect((await env.queue.view().stats("workflow-steps")).scheduled).toBe(0);
    await env.stop();
  });

  it("a step that first reads its cancelSignal after the cancel finds it aborted with the request's reason", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    let seen: { aborted: boolean; reason: string; copied: boolean; again: boolean } | undefined;
    const env = await openEnv(
      runnerOf(async (s) => {
        started = true;
        await gate;
        const signal = s.cancelSignal;
        seen = { aborted: signal.aborted, reason: String(signal.reason), copied: { ...s }.cancelSignal === signal, again: s.cancelSignal === signal };
        return StepOutcome.succeed(enc("ignored"));
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "late" });
    await until(() => started, "step started");
    expect(await env.runtime.cancel("late")).toBe(true);
    release();
    const end = await env.runtime.wait("late");
    expect(seen).toEqual({ aborted: true, reason: expect.stringMatching(/cancellation of job .* was requested/), copied: true, again: true });
    expect(end.termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
    await env.stop();
  });

  it("signals a running step, discards its outcome and its effects", async () => {
    let started = false;
    let sawAbort = false;
    const env = await openEnv(
      runnerOf(async (s) => {
        started = true;
        s.effects.put("app/x", enc("should not land"));
        await new Promise<void>((resolve) => s.cancelSignal.addEventListener("abort", () => resolve(), { once: true }));
        sawAbort = true;
        return StepOutcome.succeed(enc("ignored"));
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(() => started, "step started");
    expect(await env.runtime.status("r")).toMatchObject({ state: "running" });
    expect(await env.runtime.cancel("r")).toBe(true);
    const end = await env.runtime.wait("r");
    expect(sawAbort).toBe(true);
    expect(end.termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
    expect(end.termination.error).toBeUndefined();
    expect(end.outcome?.status).toBe("cancelled");
    expect(await env.queue.kvGet("app/x")).toBeNull();
    await env.stop();
  });

  it("a runner ignoring the signal runs to completion; a transient retry is suppressed", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    const env = await openEnv(
      runnerOf(async () => {
        calls++;
        await gate;
        throw StepError.transient("would retry");
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(() => calls === 1, "running");
    expect(await env.runtime.cancel("r")).toBe(true);
    expect(await env.runtime.status("r")).toMatchObject({ state: "cancelling" });
    release();
    const end = await env.runtime.wait("r");
    expect(end.termination.status).toBe("cancelled");
    expect(calls).toBe(1);
    expect((await env.queue.view().stats("workflow-steps")).dead).toBe(0);
    await env.stop();
  });

  it("a runner-issued cancel keeps its effects", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        s.effects.put("app/kept", enc("yes"));
        return StepOutcome.cancel("runner");
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    expect((await env.runtime.wait("r")).termination).toMatchObject({ status: "cancelled", error: "runner", errorKind: "runner" });
    expect(dec(await env.queue.kvGet("app/kept"))).toBe("yes");
    await env.stop();
  });

  it("settles a step claimed after the request as cancelled without running it", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran: number[] = [];
    const runner = runnerOf(async (s) => {
      ran.push(s.stepNumber);
      if (s.stepNumber === 0) {
        await gate;
        return StepOutcome.continueNow(s.payload);
      }
      return StepOutcome.succeed(s.payload);
    });
    const env = await openEnv(runner, { store, clock });
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(() => ran.length === 1, "step 0 running");
    // Record the request durably without delivering it to the running claim, as a
    // runtime over the same queue would after this process restarted.
    const { encodeRunRecord, decodeRunRecord } = await import("../../runtime/workflow/records/records.js");
    const cur = (await env.queue.kvGet("workflow/runs/workflow-steps/r"))!;
    await env.queue.kvCompareAndPut("workflow/runs/workflow-steps/r", cur, encodeRunRecord({ ...decodeRunRecord(cur, "k"), cancelRequested: true }));
    release();
    const end = await env.runtime.wait("r");
    expect(end.termination).toMatchObject({ status: "cancelled" });
    expect(ran).toEqual([0]);
    await env.stop();
  });

  it("cancels a run waiting on a delay after a restart", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const runner = runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 86_400_000) : StepOutcome.succeed(s.payload)));
    const env = await openEnv(runner, { store, clock });
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(async () => (await env.runtime.status("r"))?.step === 1, "scheduled");
    await env.stop();
    const env2 = await openEnv(runner, { store, clock });
    expect(await env2.runtime.status("r")).toMatchObject({ state: "pending", step: 1 });
    expect(await env2.runtime.cancel("r")).toBe(true);
    expect((await env2.runtime.wait("r")).termination).toMatchObject({ status: "cancelled", finalStep: 1 });
    clock.advance(86_400_000);
    await settle();
    expect(await env2.runtime.status("r")).toMatchObject({ state: "terminated", status: "cancelled" });
    await env2.stop();
  });

  it("a later submission of the same id starts without the request", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await env.runtime.cancel("r");
    await env.runtime.submit({ input: enc("y"), runId: "r" });
    const worker = env.runtime.spawn();
    expect((await env.runtime.wait("r")).termination.status).toBe("succeeded");
    await worker.shutdown();
    await env.stop();
  });

  it("cancels a run waiting on a signal after a restart, releasing its key", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const runner = runnerOf(async (s) =>
      s.stepNumber === 0 ? StepOutcome.continueOnSignal(s.payload, "approval:1", 86_400_000) : StepOutcome.succeed(s.payload),
    );
    const env = await openEnv(runner, { store, clock });
    await env.runtime.submit({ input: enc("x"), runId: "w" });
    await until(async () => (await env.runtime.status("w"))?.step === 1, "waiting");
    await env.stop();
    const env2 = await openEnv(runner, { store, clock });
    expect(await env2.runtime.cancel("w")).toBe(true);
    expect((await env2.runtime.wait("w")).termination).toMatchObject({ status: "cancelled", finalStep: 1 });
    expect(await env2.queue.kvGet("workflow/signal-wait/workflow-steps/approval:1")).toBeNull();
    expect(await env2.runtime.signal("approval:1", enc("late"))).toBe("buffered");
    await env2.stop();
  });
});
