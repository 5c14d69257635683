/**
 * @module Memo store failures around termination: the step is retried, or on
 * its last attempt terminates without the result record.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StepOutcome, type ObjectStore } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

/** Fails the next `n` puts of run result records. */
function failingOutcomeWrites(n: number): ObjectStore & { failed: number } {
  const inner = new MemoryStore();
  const s = {
    failed: 0,
    get: (k: string) => inner.get(k),
    delete: (k: string) => inner.delete(k),
    list: (p: string, o?: { startAfter?: string }) => inner.list(p, o),
    async put(k: string, b: Uint8Array, o?: { ifNoneMatch?: "*" }) {
      if (k.startsWith("workflow-steps-memo/memos/") && k.includes("/run/") && s.failed < n) {
        s.failed++;
        throw new Error("injected memo store outage");
      }
      return inner.put(k, b, o);
    },
  };
  return s;
}

describe("memo store failures around termination", () => {
  it("retries the step when the run result record cannot be written", async () => {
    const store = failingOutcomeWrites(1);
    let calls = 0;
    const env = await openEnv(runnerOf(async (s) => (calls++, StepOutcome.succeed(s.payload))), { store });
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(() => store.failed === 1 && calls === 1, "first attempt failed to record");
    expect(await env.runtime.waitTimeout("r", 0)).toBeNull();
    env.clock.advance(1_000);
    const end = await env.runtime.wait("r");
    expect(calls).toBe(2);
    expect(dec(end.outcome!.result)).toBe("x");
    await env.stop();
  });

  it("on the last attempt terminates without the record rather than dead-lettering", async () => {
    const store = failingOutcomeWrites(1);
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)), { store });
    await env.runtime.submit({ input: enc("x"), runId: "r", options: { maxAttemptsPerStep: 1 } });
    const end = await env.runtime.wait("r");
    expect(end.termination.status).toBe("succeeded");
    expect(end.outcome).toBeNull();
    expect((await env.queue.view().stats("workflow-steps")).dead).toBe(0);
    await env.stop();
  });
});
