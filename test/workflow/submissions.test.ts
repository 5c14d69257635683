/**
 * @module Submitting runs: generated run ids, idempotency on (runId, input),
 * concurrent and post-claim duplicates, bad input, submission effects and
 * per-step options.
 */
import { describe, expect, it } from "vitest";
import {
  InputMismatchError,
  InvalidRunIdError,
  MemoryStore,
  MockClock,
  ReservedHeaderError,
  ReservedKeyError,
  RunId,
  SettlementEffects,
  StepOutcome,
  ValidationError,
} from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

describe("submissions", () => {
  it("generates a ULID run id when none is given", async () => {
    const env = await openEnv(echo, { start: false });
    const a = await env.runtime.submit({ input: enc("a") });
    expect(RunId.isValid(a.runId)).toBe(true);
    expect(a.runId).toHaveLength(26);
    expect(a.newlySubmitted).toBe(true);
    expect(await env.runtime.status(a.runId)).toMatchObject({ state: "pending", step: 0 });
    await env.stop();
  });

  it("is idempotent on (runId, input) and rejects a different input", async () => {
    const env = await openEnv(echo, { start: false });
    const first = await env.runtime.submit({ input: enc("in"), runId: "r" });
    const again = await env.runtime.submit({ input: enc("in"), runId: "r" });
    expect(again).toEqual({ runId: "r", jobId: first.jobId, newlySubmitted: false });
    await expect(env.runtime.submit({ input: enc("other"), runId: "r" })).rejects.toBeInstanceOf(InputMismatchError);
    expect((await env.queue.view().stats("workflow-steps")).pending).toBe(1);
    await env.stop();
  });

  it("catches duplicates after step 0 was claimed and across a restart", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const env = await openEnv(
      runnerOf(async (s) => {
        if (s.stepNumber === 0) return StepOutcome.continueNow(s.payload);
        await gate;
        return StepOutcome.succeed(s.payload);
      }),
      { store, clock },
    );
    const first = await env.runtime.submit({ input: enc("in"), runId: "r" });
    await until(async () => (await env.runtime.status("r"))?.state === "running" && (await env.runtime.status("r"))?.step === 1, "step 1 running");
    const dup = await env.runtime.submit({ input: enc("in"), runId: "r" });
    expect(dup.newlySubmitted).toBe(false);
    expect(dup.jobId).not.toBe(first.jobId); // the job that currently represents the run
    release();
    await env.runtime.wait("r");
    await env.stop();

    const env2 = await openEnv(echo, { store, clock, start: false });
    const pending = await env2.runtime.submit({ input: enc("p"), runId: "pending" });
    await env2.queue.close();
    const env3 = await openEnv(echo, { store, clock, start: false });
    expect(await env3.runtime.submit({ input: enc("p"), runId: "pending" })).toEqual({ runId: "pending", jobId: pending.jobId, newlySubmitted: false });
    await expect(env3.runtime.submit({ input: enc("q"), runId: "pending" })).rejects.toBeInstanceOf(InputMismatchError);
    await env3.stop();
  });

  it("concurrent duplicate submissions create one run", async () => {
    const env = await openEnv(echo, { start: false });
    const outs = await Promise.all(Array.from({ length: 8 }, () => env.runtime.submit({ input: enc("x"), runId: "same" })));
    expect(outs.filter((o) => o.newlySubmitted)).toHaveLength(1);
    expect(new Set(outs.map((o) => o.jobId)).size).toBe(1);
    expect((await env.queue.view().stats("workflow-steps")).pending).toBe(1);
    await env.stop();
  });

  it("rejects bad input with typed errors and writes nothing", async () => {
    const env = await openEnv(echo, { start: false });
    await expect(env.runtime.submit({ input: enc("x"), runId: "bad id" })).rejects.toBeInstanceOf(InvalidRunIdError);
    await expect(env.runtime.submit({ input: enc("x"), options: { headers: { "workflow.step": "9" } } })).rejects.toBeInstanceOf(ReservedHeaderError);
    const reserved = new SettlementEffects().kvPut("workflow/runs/x", enc("1"));
    await expect(env.runtime.submit({ input: enc("x"), effects: reserved })).rejects.toBeInstanceOf(ReservedKeyError);
    // Step options are named as RunOptions names them.
    await expect(env.runtime.submit({ input: enc("x"), options: { maxAttemptsPerStep: 0 } })).rejects.toThrow(/RunOptions\.maxAttemptsPerStep/);
    await expect(env.runtime.submit({ input: enc("x"), options: { runAt: Number.NaN } })).rejects.toThrow(/RunOptions\.runAt/);
    await expect(env.runtime.submit({ input: enc("x"), options: { priority: 1.5 } })).rejects.toBeInstanceOf(ValidationError);
    expect((await env.queue.view().stats("workflow-steps")).pending).toBe(0);
    expect((await env.queue.kvScan("")).entries).toEqual([]);
    await env.stop();
  });

  it("applies RunSpec.effects with step 0 and drops them on a duplicate", async () => {
    const env = await openEnv(echo, { start: false });
    await env.runtime.submit({ input: enc("x"), runId: "e", effects: new SettlementEffects().kvPut("app/e", enc("first")) });
    await env.runtime.submit({ input: enc("x"), runId: "e", effects: new SettlementEffects().kvPut("app/e", enc("second")) });
    expect(dec(await env.queue.kvGet("app/e"))).toBe("first");
    await env.stop();
  });

  it("applies priority, attempts, run-at and headers to every step", async () => {
    const seen: Array<{ step: number; max: number; headers: Record<string, string> }> = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        seen.push({ step: s.stepNumber, max: s.maxAttempts, headers: { ...s.headers } });
        return s.stepNumber === 0 ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
      }),
    );
    const runAt = env.clock.now() + 10_000;
    const sub = await env.runtime.submit({ input: enc("x"), runId: "o", options: { priority: 7, maxAttemptsPerStep: 5, runAt, headers: { a: "b" } } });
    const job = await env.queue.view().job(sub.jobId);
    expect(job).toMatchObject({ state: "scheduled", priority: 7, maxAttempts: 5, runAt });
    expect(job?.headers).toMatchObject({ a: "b", "workflow.run_id": "o", "workflow.step": "0" });
    env.clock.advance(10_000);
    await env.runtime.wait("o");
    expect(seen).toEqual([
      { step: 0, max: 5, headers: { a: "b" } },
      { step: 1, max: 5, headers: { a: "b" } },
    ]);
    await env.stop();
  });

  it("starts a fresh run when a terminated run id is submitted again", async () => {
    const env = await openEnv(echo);
    await env.runtime.submit({ input: enc("one"), runId: "again" });
    expect(dec((await env.runtime.wait("again")).outcome!.result)).toBe("one");
    const second = await env.runtime.submit({ input: enc("two"), runId: "again" });
    expect(second.newlySubmitted).toBe(true);
    expect(dec((await env.runtime.wait("again")).outcome!.result)).toBe("two");
    await env.stop();
  });
});
