/**
 * @module The outcome of a run that ends without a worker: a cancel of a
 * waiting step, a step dead-lettered by the reaper or by recovery on open,
 * a debounce replacing a run. `outcome()` and `wait()` report the
 * termination `status()` reports, with the run's headers (in the terminal
 * record when they fit, else in a run result record), the same after a
 * restart and through a `WorkflowView` over another process's reader.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoStore, MemoryStore, MockClock, QueueReader, StepOutcome, WorkflowView } from "taquba";
import { decodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { INLINE_OUTCOME_MAX_BYTES } from "../../runtime/workflow/runs/inline-outcome.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { enc, hangingRunner, openEnv, runnerOf, until, type Env } from "./helpers.js";

const tempDir = useTempDirs("wf-outcome-end-");
const headers = { tenant: "acme", order: "o-17" };
const succeeding = runnerOf(async (s) => StepOutcome.succeed(s.payload));

/** The run's outcome agrees with its status, also through `wait`; returns the outcome. */
async function agreesWithStatus(env: Env, runId: string) {
  const status = await env.runtime.status(runId);
  expect(status).toMatchObject({ state: "terminated" });
  if (status?.state !== "terminated") throw new Error("unreachable");
  const outcome = await env.runtime.outcome(runId);
  expect(outcome).not.toBeNull();
  expect(outcome).toMatchObject({ runId, status: status.status, finalStep: status.finalStep });
  expect(outcome!.error).toBe(status.error);
  expect(outcome!.errorKind).toBe(status.errorKind);
  expect(outcome!.supersededBy).toBe(status.supersededBy);
  expect(outcome!.result).toBeUndefined();
  expect((await env.runtime.wait(runId)).outcome).toEqual(outcome);
  return outcome!;
}

describe("the outcome of a run ended without a worker", () => {
  it("a cancel of a pending step: cancelled with its headers, also after a restart and from another process's reader", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const env = await openEnv(succeeding, { store, start: false });
    await env.runtime.submit({ input: enc("x"), runId: "p", options: { headers } });
    expect(await env.runtime.cancel("p")).toBe(true);
    const outcome = await agreesWithStatus(env, "p");
    expect(outcome).toEqual({ runId: "p", status: "cancelled", errorKind: "cancelled", finalStep: 0, headers });
    await env.stop();

    const again = await openEnv(succeeding, { store: new LocalStore(dir), start: false });
    expect(await again.runtime.outcome("p")).toEqual(outcome);
    const reader = await QueueReader.open(new LocalStore(dir), "wf");
    try {
      const view = new WorkflowView(reader, new MemoStore(new LocalStore(dir), "workflow-steps-memo"));
      expect(await view.outcome("p")).toEqual(outcome);
    } finally {
      await reader.close();
    }
    await again.stop();
  });

  it("a cancel of a step waiting for its time: cancelled at that step", async () => {
    const env = await openEnv(runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 3_600_000) : StepOutcome.succeed(s.payload))));
    await env.runtime.submit({ input: enc("x"), runId: "s", options: { headers } });
    await until(async () => (await env.runtime.status("s"))?.step === 1, "scheduled");
    expect(await env.runtime.cancel("s")).toBe(true);
    expect(await agreesWithStatus(env, "s")).toEqual({ runId: "s", status: "cancelled", errorKind: "cancelled", finalStep: 1, headers });
    await env.stop();
  });

  it("a step the reaper dead-lettered: failed with the step's last error", async () => {
    let release!: () => void;
    const runner = hangingRunner(new Promise<void>((r) => (release = r)));
    const env = await openEnv(runner, { queueOptions: { queueConfigs: { "workflow-steps": { leaseMs: 1_000, maxAttempts: 1 } } } });
    await env.runtime.submit({ input: enc("x"), runId: "reaped", options: { headers } });
    await until(() => runner.calls === 1, "step running");
    env.clock.advance(10_000); // past the lease: the reaper dead-letters the step, its attempts spent
    await env.runtime.wait("reaped");
    const outcome = await agreesWithStatus(env, "reaped");
    expect(outcome).toMatchObject({ status: "failed", errorKind: "dead_lettered", headers });
    expect(outcome.error).toEqual(expect.any(String));
    release();
    await env.stop();
  });

  it("a step recovery dead-lettered when the queue was reopened after a crash", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    let release!: () => void;
    const runner = hangingRunner(new Promise<void>((r) => (release = r)));
    const queueOptions = { queueConfigs: { "workflow-steps": { maxAttempts: 1 } } };
    const env = await openEnv(runner, { store, clock, queueOptions });
    await env.runtime.submit({ input: enc("x"), runId: "crashed", options: { headers } });
    await until(() => runner.calls === 1, "step running");
    await env.queue.close(); // the process dies with the step claimed
    release();
    await env.worker!.shutdown();

    const env2 = await openEnv(runner, { store, clock, queueOptions });
    await env2.runtime.wait("crashed");
    const outcome = await agreesWithStatus(env2, "crashed");
    expect(outcome).toMatchObject({ status: "failed", errorKind: "dead_lettered", headers });
    await env2.stop();
    const env3 = await openEnv(runner, { store, clock, queueOptions, start: false });
    expect(await env3.runtime.outcome("crashed")).toEqual(outcome);
    await env3.stop();
  });

  it("a run a debounce replaced: cancelled, superseded by the run that replaced it", async () => {
    const env = await openEnv(succeeding, { start: false });
    const debounce = { key: "report", periodMs: 1_000 };
    await env.runtime.submit({ input: enc("a"), runId: "first", options: { headers, debounce } });
    await env.runtime.submit({ input: enc("b"), runId: "second", options: { debounce } });
    const outcome = await agreesWithStatus(env, "first");
    expect(outcome).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: "second", headers });
    expect(outcome.error).toContain("second");
    await env.stop();
  });

  it("headers too large for the terminal record: the termination with them whole, from a result record, never null", async () => {
    const env = await openEnv(succeeding, { start: false });
    const big = { note: "n".repeat(INLINE_OUTCOME_MAX_BYTES) };
    await env.runtime.submit({ input: enc("x"), runId: "big", options: { headers: big } });
    expect(await env.runtime.cancel("big")).toBe(true);
    const key = terminalRecordKey("workflow-steps", "big");
    // The terminal record stays within its bound: no inline part.
    expect(decodeTerminalRecord((await env.queue.kvGet(key))!, key).inline).toBeUndefined();
    expect(await agreesWithStatus(env, "big")).toEqual({ runId: "big", status: "cancelled", errorKind: "cancelled", finalStep: 0, headers: big });
    await env.stop();
  });

  it("a worker's cancel of a running step still reports the outcome the worker recorded", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    const env = await openEnv(
      runnerOf(async (s) => {
        started = true;
        await gate;
        return StepOutcome.succeed(s.payload);
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "running", options: { headers } });
    await until(() => started, "step started");
    expect(await env.runtime.cancel("running")).toBe(true);
    release();
    await env.runtime.wait("running");
    const key = terminalRecordKey("workflow-steps", "running");
    expect(decodeTerminalRecord((await env.queue.kvGet(key))!, key).token).not.toMatch(/^cancel:/);
    expect(await agreesWithStatus(env, "running")).toMatchObject({ status: "cancelled", errorKind: "cancelled", headers });
    await env.stop();
  });
});
