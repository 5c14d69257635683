/**
 * @module Memo store failures around termination: the result record write is
 * retried, and when the store keeps failing the step goes back to the queue
 * without counting an attempt, so a run never terminates without its record.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StepOutcome, type ObjectStore } from "taquba";
import { STORE_RETRY } from "../../runtime/workflow/store-retry.js";
import { dec, enc, openEnv, overInline, runnerOf } from "./helpers.js";

/** Fails the next `n` puts of run result records. */
function failingOutcomeWrites(n: number): ObjectStore & { failed: number } {
  const inner = new MemoryStore();
  const s = {
    failed: 0,
    get: (k: string) => inner.get(k),
    delete: (k: string) => inner.delete(k),
    list: (p: string, o?: { startAfter?: string }) => inner.list(p, o),
    async put(k: string, b: Uint8Array, o?: { ifNoneMatch?: "*" }) {
      if (k.startsWith("workflow-steps-memo/run-results/") && s.failed < n) {
        s.failed++;
        throw new Error("injected memo store outage");
      }
      return inner.put(k, b, o);
    },
  };
  return s;
}

/** Fails the next `n` reads of replay records (read before the runner runs when step output replay is on). */
function failingReplayReads(n: number): ObjectStore & { failed: number } {
  const inner = new MemoryStore();
  const s = {
    failed: 0,
    async get(k: string) {
      if (k.startsWith("workflow-steps-memo/step-outputs/") && s.failed < n) {
        s.failed++;
        throw new Error("injected memo store outage");
      }
      return inner.get(k);
    },
    delete: (k: string) => inner.delete(k),
    list: (p: string, o?: { startAfter?: string }) => inner.list(p, o),
    put: (k: string, b: Uint8Array, o?: { ifNoneMatch?: "*" }) => inner.put(k, b, o),
  };
  return s;
}

describe("memo store failures around termination", () => {
  it("retries the run result record write in place: one failed put does not run the step again", async () => {
    const store = failingOutcomeWrites(1);
    let calls = 0;
    const env = await openEnv(
      runnerOf(async (s) => (calls++, StepOutcome.succeed(overInline(dec(s.payload))))),
      { store },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    const end = await env.runtime.wait("r");
    expect(store.failed).toBe(1);
    expect(calls).toBe(1);
    expect(dec(end.outcome!.result).trimEnd()).toBe("x");
    await env.stop();
  });

  it("on the last attempt, a store that keeps failing puts the step back uncounted: the run never ends without its result", async () => {
    // More failures than one delivery's in-place retries: the first delivery gives up and puts the step back.
    const store = failingOutcomeWrites(STORE_RETRY.attempts + 1);
    let calls = 0;
    const env = await openEnv(
      runnerOf(async (s) => (calls++, StepOutcome.succeed(overInline(dec(s.payload))))),
      { store },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r", options: { maxAttemptsPerStep: 1 } });
    const end = await env.runtime.wait("r");
    expect(end.termination.status).toBe("succeeded");
    expect(dec(end.outcome!.result).trimEnd()).toBe("x");
    expect(calls).toBe(2);
    expect((await env.queue.view().stats("workflow-steps")).dead).toBe(0);
    expect(env.logged.length).toBeGreaterThan(0);
    await env.stop();
  }, 20_000);

  it("a store that keeps failing before the runner runs puts the step back uncounted: its one attempt runs once the store answers", async () => {
    const store = failingReplayReads(STORE_RETRY.attempts + 1);
    const attempts: number[] = [];
    const env = await openEnv(
      runnerOf(async (s) => (attempts.push(s.attempt), StepOutcome.succeed(enc("done")))),
      { store, configure: (b) => b.stepOutputReplay() },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r", options: { maxAttemptsPerStep: 1 } });
    const end = await env.runtime.wait("r");
    expect(end.termination.status).toBe("succeeded");
    // The first delivery gave up before the runner; the step came back on the same attempt, not dead-lettered.
    expect(store.failed).toBe(STORE_RETRY.attempts + 1);
    expect(attempts).toEqual([1]);
    expect((await env.queue.view().stats("workflow-steps")).dead).toBe(0);
    expect(env.logged.length).toBeGreaterThan(0);
    await env.stop();
  }, 20_000);
});
