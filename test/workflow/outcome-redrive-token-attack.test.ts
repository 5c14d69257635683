/**
 * @module A run whose step the queue dead-lettered, redriven: the dead job
 * itself is requeued with fresh attempts (which once gave the worker that
 * ends the run again the same delivery token, `<job id>:<attempt>`, as
 * the end before it; the requeue count now tells them apart). When both
 * ends wrote a run result record (outcomes past what the terminal record
 * keeps), a reader in another process that read the first one must
 * answer the second once the run ended again, as its status does, and
 * never the first end's outcome.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, QueueReader, StepOutcome, WorkflowView } from "taquba";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { INLINE_OUTCOME_MAX_BYTES } from "../../runtime/workflow/runs/inline-outcome.js";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";

const large = (c: string) => c.repeat(INLINE_OUTCOME_MAX_BYTES + 100);

describe("the outcome of a run ended again under the same delivery token", () => {
  it("the second end failed too, with another error: the reader answers the second error", async () => {
    let round = 0;
    const store = new MemoryStore();
    const env = await openEnv(
      runnerOf(async () => {
        throw new Error(large(round === 0 ? "E" : "F"));
      }),
      { store, queueOptions: { queueConfigs: { "workflow-steps": { maxAttempts: 1 } } } },
    );
    const reader = await QueueReader.open(store, "wf");
    try {
      await env.runtime.submit({ input: enc("x"), runId: "f" });
      await env.runtime.wait("f");
      const view = new WorkflowView(reader, new MemoStore(store, "workflow-steps-memo"));
      await reader.refresh();
      expect((await view.outcome("f"))?.error).toContain("EEE");
      round = 1;
      await env.runtime.retryRun("f");
      await env.runtime.wait("f");
      await reader.refresh();
      const outcome = await view.outcome("f");
      expect(outcome).toMatchObject({ status: "failed" });
      expect(outcome?.error).toContain("FFF");
      expect(outcome?.error).not.toContain("EEE");
    } finally {
      await reader.close();
      await env.stop();
    }
  });

  it("a reader that read the first end's result record answers the second end's after a redrive of the dead step", async () => {
    let failing = true;
    const store = new MemoryStore();
    const env = await openEnv(
      runnerOf(async () => {
        if (failing) throw new Error(large("E"));
        return StepOutcome.succeed(enc(large("R")));
      }),
      { store, queueOptions: { queueConfigs: { "workflow-steps": { maxAttempts: 1 } } } },
    );
    const reader = await QueueReader.open(store, "wf");
    try {
      await env.runtime.submit({ input: enc("x"), runId: "r" });
      expect((await env.runtime.wait("r")).termination.status).toBe("failed");
      const key = terminalRecordKey("workflow-steps", "r");
      const firstToken = decodeTerminalRecord((await env.queue.kvGet(key))!, key).token;
      // Another process's view reads the first end, as a client's wait and outcome would.
      const view = new WorkflowView(reader, new MemoStore(store, "workflow-steps-memo"));
      await reader.refresh();
      expect(await view.outcome("r")).toMatchObject({ status: "failed", error: expect.stringContaining("EEE") });

      failing = false;
      await env.runtime.retryRun("r");
      const second = await env.runtime.wait("r");
      expect(second.termination.status).toBe("succeeded");
      // Its own token, though the requeued dead job's attempts started again: the requeue is counted.
      expect(decodeTerminalRecord((await env.queue.kvGet(key))!, key).token).not.toBe(firstToken);

      await reader.refresh();
      expect(await view.status("r")).toMatchObject({ state: "terminated", status: "succeeded" });
      const outcome = await view.outcome("r");
      expect(outcome?.status).toBe("succeeded");
      expect(outcome?.error).toBeUndefined();
      expect(dec(outcome?.result)).toBe(large("R"));
      // And the end `wait` reports, read from the same terminal record.
      const key2 = terminalRecordKey("workflow-steps", "r");
      expect((await view.endOf(decodeTerminalRecord((await reader.kvGet(key2))!, key2))).outcome).toEqual(outcome);
    } finally {
      await reader.close();
      await env.stop();
    }
  });
});
