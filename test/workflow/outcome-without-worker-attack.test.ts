/**
 * @module Attacks on the outcome of a run that ended without a worker:
 * `outcome()` and `wait()` racing a cancel, a cancel racing the worker's
 * claim, a redrive after such an end (the outcome is the later end's, never
 * the first termination's), headers just under and just over what the
 * terminal record keeps (over it, in a run result record), in several
 * scripts. Every answer agrees with
 * `status()`; none is null for an ended run or the wrong end's.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome } from "taquba";
import { encodeInlineOutcome } from "../../runtime/workflow/records/records.js";
import { INLINE_OUTCOME_MAX_BYTES } from "../../runtime/workflow/runs/inline-outcome.js";
import { dec, enc, hangingRunner, headersAtAndOverInline, headersEncodingTo, openEnv, overInline, runnerOf, until, type Env } from "./helpers.js";

const headers = { tenant: "acme" };
const echo = runnerOf(async (s) => StepOutcome.succeed(enc(`done:${dec(s.payload)}`)));

/** The outcome agrees with `status()` and with what `wait()` reports. */
async function consistent(env: Env, runId: string) {
  const status = await env.runtime.status(runId);
  if (status?.state !== "terminated") throw new Error(`${runId} is ${status?.state ?? "unknown"}, not terminated`);
  const outcome = await env.runtime.outcome(runId);
  expect(outcome).not.toBeNull();
  expect(outcome).toMatchObject({ runId, status: status.status, finalStep: status.finalStep });
  expect(outcome!.errorKind).toBe(status.errorKind);
  expect(outcome!.error).toBe(status.error);
  expect((await env.runtime.wait(runId)).outcome).toEqual(outcome);
  return outcome!;
}

describe("outcome() of a run ended without a worker, attacked", () => {
  it("a wait and an outcome() started before a cancel of the pending step answer the cancel, with the headers", async () => {
    const env = await openEnv(echo, { start: false });
    await env.runtime.submit({ input: enc("x"), runId: "w", options: { headers } });
    const waiting = env.runtime.wait("w");
    const before = env.runtime.outcome("w");
    const cancelled = env.runtime.cancel("w");
    const during = env.runtime.outcome("w");
    expect(await cancelled).toBe(true);
    // Asked while the run was active: no outcome yet, or the cancel's. Never another.
    for (const o of [await before, await during]) if (o !== null) expect(o).toMatchObject({ status: "cancelled", headers });
    const end = await waiting;
    expect(end.termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
    expect(end.outcome).toEqual({ runId: "w", status: "cancelled", errorKind: "cancelled", finalStep: 0, headers });
    expect(await consistent(env, "w")).toEqual(end.outcome);
    await env.stop();
  });

  it("a cancel racing the worker's claim: the outcome is the end that committed, the worker's or the cancel's", async () => {
    const turns = (n: number) => Promise.all(Array.from({ length: n }, () => new Promise<void>((r) => setImmediate(r))));
    // The step takes a few turns, so a cancel can also land while it runs.
    const runner = runnerOf(async (s) => {
      await turns(Number(dec(s.payload)) % 3);
      return StepOutcome.succeed(enc(`done:${dec(s.payload)}`));
    });
    const ends = new Set<string>();
    for (let i = 0; i < 36; i++) {
      const env = await openEnv(runner, { start: false });
      const runId = `race-${i}`;
      await env.runtime.submit({ input: enc(String(i)), runId, options: { headers } });
      const worker = env.runtime.spawn();
      // Cancel after 0..11 turns: before the claim, while the step runs, or after the end.
      for (let t = 0; t < i % 12; t++) await new Promise<void>((r) => setImmediate(r));
      const cancelled = await env.runtime.cancel(runId);
      await env.runtime.wait(runId);
      const o = await consistent(env, runId);
      expect(o.headers).toEqual(headers);
      if (o.status === "succeeded") {
        expect(dec(o.result)).toBe(`done:${i}`);
        expect(cancelled).toBe(false);
      } else {
        expect(o).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
        expect(cancelled).toBe(true);
      }
      ends.add(o.status);
      await worker.shutdown();
      await env.stop();
    }
    expect([...ends].sort()).toEqual(["cancelled", "succeeded"]);
  });

  it("a redrive after a cancel of the pending step: the outcome is the worker's end, also when its result went to a result record", async () => {
    const env = await openEnv(echo, { start: false });
    for (const [runId, input] of [
      ["small", "s"],
      ["large", "l".repeat(INLINE_OUTCOME_MAX_BYTES + 8)],
    ] as const) {
      await env.runtime.submit({ input: enc(input), runId, options: { headers } });
      expect(await env.runtime.cancel(runId)).toBe(true);
      expect(await consistent(env, runId)).toMatchObject({ status: "cancelled", headers });
      await env.runtime.retryRun(runId);
      // Re-opened: no outcome until it ends again.
      expect(await env.runtime.outcome(runId)).toBeNull();
    }
    const worker = env.runtime.spawn();
    for (const [runId, input] of [
      ["small", "s"],
      ["large", "l".repeat(INLINE_OUTCOME_MAX_BYTES + 8)],
    ] as const) {
      const end = await env.runtime.wait(runId);
      expect(end.termination.status).toBe("succeeded");
      const o = await consistent(env, runId);
      expect(o).toMatchObject({ status: "succeeded", headers });
      expect(o.errorKind).toBeUndefined();
      expect(dec(o.result)).toBe(`done:${input}`);
    }
    await worker.shutdown();
    await env.stop();
  });

  it("cancel, redrive and cancel again: the outcome is the second cancel's, after a restart too", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const env = await openEnv(echo, { store, clock, start: false });
    await env.runtime.submit({ input: enc("x"), runId: "twice", options: { headers } });
    expect(await env.runtime.cancel("twice")).toBe(true);
    const first = await consistent(env, "twice");
    await env.runtime.retryRun("twice");
    expect(await env.runtime.cancel("twice")).toBe(true);
    const second = await consistent(env, "twice");
    expect(second).toEqual(first);
    const h = await env.runtime.inspectRun("twice");
    expect(h!.redrives).toHaveLength(1);
    await env.stop();
    const again = await openEnv(echo, { store, clock, start: false });
    expect(await consistent(again, "twice")).toEqual(second);
    await again.stop();
  });

  it("a redrive of a step the reaper dead-lettered: the outcome is the worker's end, not the dead letter's", async () => {
    let release!: () => void;
    let hang = true;
    const gate = new Promise<void>((r) => (release = r));
    const runner = runnerOf(async (s) => {
      if (hang) await gate;
      return StepOutcome.succeed(enc(`done:${dec(s.payload)}`));
    });
    const env = await openEnv(runner, { queueOptions: { queueConfigs: { "workflow-steps": { leaseMs: 1_000, maxAttempts: 1 } } } });
    await env.runtime.submit({ input: enc("d"), runId: "reaped", options: { headers } });
    await until(async () => (await env.runtime.status("reaped"))?.state === "running", "step running");
    env.clock.advance(10_000);
    await env.runtime.wait("reaped");
    expect(await consistent(env, "reaped")).toMatchObject({ status: "failed", errorKind: "dead_lettered", headers });
    hang = false;
    release();
    await env.runtime.retryRun("reaped");
    const end = await env.runtime.wait("reaped");
    expect(end.termination.status).toBe("succeeded");
    const o = await consistent(env, "reaped");
    expect(o).toMatchObject({ status: "succeeded", headers });
    expect(dec(o.result)).toBe("done:d");
    await env.stop();
  });

  for (const unit of ["a", "é", "😀"]) {
    it(`headers of ${JSON.stringify(unit)} encoding to exactly the bound are kept inline, one byte over in a result record, the same in a new process`, async () => {
      const store = new MemoryStore();
      const clock = new MockClock(1_700_000_000_000);
      const env = await openEnv(echo, { store, clock, start: false });
      const { at, over } = headersAtAndOverInline(unit);
      expect(encodeInlineOutcome({ headers: at }).byteLength).toBeLessThanOrEqual(INLINE_OUTCOME_MAX_BYTES);
      expect(encodeInlineOutcome({ headers: over }).byteLength).toBeGreaterThan(INLINE_OUTCOME_MAX_BYTES);
      await env.runtime.submit({ input: enc("x"), runId: "at", options: { headers: at } });
      await env.runtime.submit({ input: enc("x"), runId: "over", options: { headers: over } });
      expect(await env.runtime.cancel("at")).toBe(true);
      expect(await env.runtime.cancel("over")).toBe(true);
      expect((await consistent(env, "at")).headers).toEqual(at);
      expect((await consistent(env, "over")).headers).toEqual(over);
      await env.stop();
      const again = await openEnv(echo, { store, clock, start: false });
      expect((await consistent(again, "at")).headers).toEqual(at);
      expect((await consistent(again, "over")).headers).toEqual(over);
      await again.stop();
    });
  }

  it("a worker's end with headers just over the bound keeps them whole (in its result record)", async () => {
    const env = await openEnv(echo);
    let big: Record<string, string> | null = null;
    for (let b = INLINE_OUTCOME_MAX_BYTES + 1; big === null; b++) big = headersEncodingTo(b, "é");
    await env.runtime.submit({ input: enc("x"), runId: "big", options: { headers: big } });
    await env.runtime.wait("big");
    const o = await consistent(env, "big");
    expect(o.headers).toEqual(big);
    expect(dec(o.result)).toBe("done:x");
    // overInline is the helper the other outcome tests use for a result past the bound: it still round-trips.
    expect(dec(overInline("y")).trimEnd()).toBe("y");
    await env.stop();
  });

  it("a step hanging past its lease and reaped while outcome() is awaited from the start", async () => {
    let release!: () => void;
    const runner = hangingRunner(new Promise<void>((r) => (release = r)));
    const env = await openEnv(runner, { queueOptions: { queueConfigs: { "workflow-steps": { leaseMs: 1_000, maxAttempts: 1 } } } });
    await env.runtime.submit({ input: enc("x"), runId: "h", options: { headers } });
    const waiting = env.runtime.wait("h");
    await until(() => runner.calls === 1, "step running");
    env.clock.advance(10_000);
    const end = await waiting;
    expect(end.outcome).toMatchObject({ status: "failed", errorKind: "dead_lettered", headers });
    release();
    // The hung worker's late settlement is refused: the outcome stays the dead letter's.
    await new Promise<void>((r) => setTimeout(r, 20));
    expect(await consistent(env, "h")).toEqual(end.outcome);
    await env.stop();
  });
});
