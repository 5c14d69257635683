/**
 * @module Runs under transient memo-store faults (20% of memo store calls
 * failing for a while, then none): no run fails because of them, none ends
 * `succeeded` without its result, and `wait()` never rejects with a raw
 * fault. Store faults are retried; only runner errors count against a
 * step's attempts. Against memory, a local directory and S3 (s3rver).
 */
import { describe, expect, it } from "vitest";
import { MockClock, NoopTerminalHook, Queue, StepOutcome, withFaults, WorkflowRuntime, type ObjectStore, type StepRunner } from "taquba";
import { dec, enc, overInline } from "../workflow/helpers.js";
import { failing, useBackends, within, type Backend } from "./workflow-support.js";

const backends = useBackends();

/** Three steps, each memoizing an effect in its step memo and one in the run memo, with a KV effect per step. */
function countingRunner(): { runner: StepRunner; effects: Map<string, number>; runnerErrors: { n: number } } {
  const effects = new Map<string, number>();
  const runnerErrors = { n: 0 };
  const bump = (k: string) => effects.set(k, (effects.get(k) ?? 0) + 1);
  const runner: StepRunner = {
    async runStep(s) {
      const v = await s.memo.memoized("effect", async () => (bump(`${s.runId}/${s.stepNumber}`), `${dec(s.payload)}.${s.stepNumber}`));
      await s.runMemo.memoized(`seen-${s.stepNumber}`, async () => s.stepNumber);
      s.effects.put(`out/${s.runId}/${s.stepNumber}`, enc(v));
      return s.stepNumber < 2 ? StepOutcome.continueNow(enc(v)) : StepOutcome.succeed(enc(v));
    },
  };
  return { runner, effects, runnerErrors };
}

async function openRuntime(queueStore: ObjectStore, memoStore: ObjectStore, runner: StepRunner) {
  const clock = new MockClock(1_700_000_000_000);
  // No backoff between step retries: a fault counted as a runner error would exhaust the attempts at once.
  const queue = await Queue.open(queueStore, "wf", { flushIntervalMs: 1, clock, queueConfigs: { "workflow-steps": { backoff: { baseMs: 0, maxMs: 0 } } } });
  const logged: unknown[] = [];
  const runtime = WorkflowRuntime.builder(queue, memoStore, runner, NoopTerminalHook)
    .logger({ error: (o) => logged.push(o) })
    .build();
  const worker = runtime.spawn();
  return {
    queue,
    runtime,
    logged,
    async stop() {
      await worker.shutdown();
      await queue.close();
    },
  };
}

function runsUnderFaults(backend: Backend, runs: number) {
  return async () => {
    const inner = await backend.make();
    const memoStore = withFaults(inner, { failureRate: 0.2, seed: 11 });
    const { runner, effects } = countingRunner();
    const env = await openRuntime(inner, memoStore, runner);
    const ids = Array.from({ length: runs }, (_, i) => `run-${i}`);
    for (const id of ids) await env.runtime.submit({ input: enc(id), runId: id, options: { maxAttemptsPerStep: 2 } });
    // Waits start while the faults are on: their reads must be retried, never rejected.
    const ends = Promise.all(ids.map((id) => env.runtime.wait(id)));
    const calm = setTimeout(() => (memoStore.failureRate = 0), 2_000);
    try {
      const all = await within(60_000, "every run ending", ends);
      expect(memoStore.injected).toBeGreaterThan(0);
      for (const [i, end] of all.entries()) {
        expect(end.termination.status, `run ${ids[i]}: ${end.termination.error ?? ""}`).toBe("succeeded");
        expect(end.outcome, `run ${ids[i]} has its result`).not.toBeNull();
        expect(dec(end.outcome!.result)).toBe(`${ids[i]}.0.1.2`);
      }
      memoStore.failureRate = 0;
      for (const id of ids) {
        expect(dec((await env.runtime.outcome(id))!.result)).toBe(`${id}.0.1.2`);
        expect(dec(await env.queue.kvGet(`out/${id}/2`))).toBe(`${id}.0.1.2`);
      }
      // Every memoized effect ran at least once per step; faults may repeat one only when its write kept failing.
      for (const id of ids) for (const step of [0, 1, 2]) expect(effects.get(`${id}/${step}`)).toBeGreaterThanOrEqual(1);
    } finally {
      clearTimeout(calm);
      memoStore.failureRate = 0;
      await env.stop();
    }
  };
}

describe("workflow runs under transient memo-store faults", () => {
  const [memory, local, s3] = backends as [Backend, Backend, Backend];
  it(`${memory.name}: 40 runs x 3 steps at 20% faults all succeed with their results`, runsUnderFaults(memory, 40), 90_000);
  it(`${local.name}: 20 runs x 3 steps at 20% faults all succeed with their results`, runsUnderFaults(local, 20), 90_000);
  it(`${s3.name}: 10 runs x 3 steps at 20% faults all succeed with their results`, runsUnderFaults(s3, 10), 90_000);

  it("wait() resolves through a failed read of the run result record", async () => {
    const inner = await memory.make();
    const store = failing(inner, "get", (k) => k.includes("/run-results/"), 1);
    // A result too large for the terminal record, so it is read from its run result record.
    const env = await openRuntime(inner, store, { runStep: async (s) => StepOutcome.succeed(overInline(dec(s.payload))) });
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    // The first wait is answered by the record the worker just wrote (kept for one answer), so the
    // store is not read; the second reads it, and the one failure lands on that read.
    const first = await within(10_000, "wait", env.runtime.wait("r"));
    expect(store.failed).toBe(0);
    expect(dec(first.outcome!.result).trimEnd()).toBe("x");
    const end = await within(10_000, "wait", env.runtime.wait("r"));
    expect(store.failed).toBe(1);
    expect(dec(end.outcome!.result).trimEnd()).toBe("x");
    await env.stop();
  });

  it("a memo store that keeps failing beyond one delivery's retries does not spend the step's only attempt", async () => {
    const inner = await memory.make();
    // 12 failed puts of memo entries: more than one delivery retries in place.
    const store = failing(inner, "put", (k) => k.includes("/memos/") && !k.includes("/run/"), 12);
    let computed = 0;
    const env = await openRuntime(inner, store, {
      runStep: async (s) => StepOutcome.succeed(enc(await s.memo.memoized("v", async () => (computed++, "done")))),
    });
    await env.runtime.submit({ input: enc("x"), runId: "r", options: { maxAttemptsPerStep: 1 } });
    const end = await within(20_000, "the run ending", env.runtime.wait("r"));
    expect(end.termination.status).toBe("succeeded");
    expect(dec(end.outcome!.result)).toBe("done");
    expect(store.failed).toBe(12);
    expect(computed).toBe(2);
    expect(env.logged.length).toBeGreaterThanOrEqual(1);
    await env.stop();
  }, 30_000);

  it("a runner's own error still counts against the step's attempts", async () => {
    const inner = await memory.make();
    const env = await openRuntime(inner, inner, {
      runStep: async () => {
        throw new Error("the runner's own failure");
      },
    });
    await env.runtime.submit({ input: enc("x"), runId: "r", options: { maxAttemptsPerStep: 2 } });
    const end = await within(10_000, "the run ending", env.runtime.wait("r"));
    expect(end.termination.status).toBe("failed");
    expect(end.termination.error).toContain("the runner's own failure");
    await env.stop();
  });

  it("on its last attempt, a result record that cannot be written is retried until durable: never succeeded with a null outcome", async () => {
    const inner = await memory.make();
    const store = failing(inner, "put", (k) => k.includes("/run-results/"), 10);
    const env = await openRuntime(inner, store, { runStep: async (s) => StepOutcome.succeed(s.payload) });
    await env.runtime.submit({ input: enc("x"), runId: "r", options: { maxAttemptsPerStep: 1 } });
    const end = await within(20_000, "the run ending", env.runtime.wait("r"));
    expect(end.termination.status).toBe("succeeded");
    expect(dec(end.outcome!.result)).toBe("x");
    await env.stop();
  }, 30_000);
});
