/**
 * @module Attack on two ends of one run sharing a token, with step jobs a
 * caller's `WorkflowQueue` names. A worker's end of the step job "cancel"
 * at attempt 1 has the token `cancel:1`, and an external cancel of the
 * run's later step job "1" had the same: the memo sweeper took the first
 * end's retention marker for the second end's, and deleted the run at the
 * first end's retention, while the second end was still to be kept.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type StepRunner } from "taquba";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { enc, type Env, openEnv, until } from "./helpers.js";
import { namingQueue } from "./fixtures/naming-queue.js";

const STEPS = "workflow-steps";

async function tokenOf(env: Env, runId: string): Promise<string> {
  const key = terminalRecordKey(STEPS, runId);
  return decodeTerminalRecord((await env.queue.kvGet(key))!, key).token;
}

describe("two ends of one run under step jobs named 'cancel' and '1'", () => {
  it("an external cancel of job 1 after a worker's cancel of job 'cancel' at attempt 1 has a token of its own, and the run is kept for its own retention", async () => {
    const retention = 60_000;
    let release: (() => void) | undefined;
    const runner: StepRunner = {
      async runStep() {
        // Held until the cancel request reaches the running step.
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return StepOutcome.succeed(enc("too late"));
      },
    };
    const env = await openEnv(runner, { wrapQueue: namingQueue(["cancel", "1"]), configure: (b) => b.memoRetention(retention).pollIntervalMs(3_600_000) });
    try {
      expect((await env.runtime.submit({ input: enc("x"), runId: "a" })).jobId).toBe("cancel");
      await until(() => release !== undefined, "the step running");
      await env.runtime.cancel("a");
      release!();
      expect((await env.runtime.wait("a")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      const first = await tokenOf(env, "a");
      expect(first).toBe("cancel:1");
      // No worker for the redriven step: its job "1" waits, and the cancel removes it.
      await env.worker!.shutdown();
      env.clock.advance(retention / 2);
      await env.runtime.retryRun("a");
      expect((await env.runtime.status("a"))?.state).toBe("pending");
      expect(await env.runtime.cancel("a")).toBe(true);
      expect((await env.runtime.wait("a")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled", finalStep: 0 });
      expect(await tokenOf(env, "a")).not.toBe(first);

      // The first end's retention ran out, not the second's.
      env.clock.advance(retention / 2 + 1);
      expect(await env.runtime.sweepMemos()).toBe(0);
      expect(await env.runtime.status("a")).toMatchObject({ state: "terminated", status: "cancelled" });
      env.clock.advance(retention / 2);
      expect(await env.runtime.sweepMemos()).toBe(1);
      expect(await env.runtime.status("a")).toBeNull();
    } finally {
      release?.();
      await env.stop();
    }
  });
});
