/**
 * @module A run this process's worker ended is answered by `wait` and
 * `outcome` from the terminal record the worker committed, kept in memory
 * while the stored bytes are those it committed: the record's bytes are
 * not read and decoded again. Every other end is read from the store as
 * before: a reopened queue, a run ended by another runtime or a cancel, a
 * run redriven and ended again, and a reader in another process.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, TaqubaClient, WorkflowRuntime, NoopTerminalHook, type Queue, type TerminalHook } from "taquba";
import type { KvKeyRef } from "../../runtime/queue/user-keys.js";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";
import { gate } from "../support/gate.js";

/** Counts the runtime's lent reads of each run's terminal record key on `queue`. */
function countTerminalReads(queue: Queue): Map<string, number> {
  const reads = new Map<string, number>();
  const borrow = queue.kvBorrowNow.bind(queue);
  queue.kvBorrowNow = (k: string | KvKeyRef) => {
    const key = typeof k === "string" ? k : k.key;
    reads.set(key, (reads.get(key) ?? 0) + 1);
    return borrow(k);
  };
  return reads;
}

const terminalReads = (reads: Map<string, number>, runId: string) => reads.get(terminalRecordKey("workflow-steps", runId)) ?? 0;

describe("a wait and an outcome of a run ended in this process", () => {
  it("answer from the record the worker committed, without reading its bytes, as a read from the store answers", async () => {
    const result = enc("result of r1");
    // A runner held on it ends its run only after the wait began.
    const g = gate();
    // A hook that changes the outcome it is shown changes neither the record stored nor the one kept.
    const hook: TerminalHook = {
      observes(o) {
        o.result?.fill(0x23);
        return false;
      },
      async onTermination() {},
    };
    const env = await openEnv(
      runnerOf(async () => {
        await g.opened;
        return StepOutcome.succeed(result);
      }),
      { hook },
    );
    const reads = countTerminalReads(env.queue);
    try {
      await env.runtime.submit({ runId: "r1", input: enc("in"), options: { headers: { tenant: "t1" } } });
      const waited = env.runtime.wait("r1");
      g.open();
      const end = await waited;
      expect(end.termination).toMatchObject({ runId: "r1", status: "succeeded", finalStep: 0 });
      expect(dec(end.outcome?.result)).toBe("result of r1");
      expect(end.outcome?.headers).toMatchObject({ tenant: "t1" });
      // The runner's array, changed after its run ended, is not the outcome's either.
      result.fill(0x21);
      const outcome = await env.runtime.outcome("r1");
      expect(dec(outcome?.result)).toBe("result of r1");
      outcome!.result!.fill(0x22);
      expect(dec((await env.runtime.outcome("r1"))?.result)).toBe("result of r1");
      expect(terminalReads(reads, "r1")).toBe(0);

      // The store's own record answers the same (a client is another process's reader).
      const client = await TaqubaClient.open(env.store, { name: "wf", queueName: "workflow-steps" });
      try {
        expect(await client.outcome("r1")).toEqual(await env.runtime.outcome("r1"));
      } finally {
        await client.close();
      }
      expect(await env.runtime.status("r1")).toMatchObject({ state: "terminated", status: "succeeded", step: 0 });
    } finally {
      await env.stop();
    }
  });

  it("a failed end is kept too, and a redrive's later end is read from the store, not the record kept", async () => {
    let calls = 0;
    const g = gate();
    const env = await openEnv(
      runnerOf(async () => {
        await g.opened;
        calls++;
        if (calls === 1) throw StepError.permanent(new Error("first end"));
        return StepOutcome.succeed(enc("second end"));
      }),
    );
    const reads = countTerminalReads(env.queue);
    try {
      await env.runtime.submit({ runId: "r2", input: enc("in") });
      const waited = env.runtime.wait("r2");
      g.open();
      expect((await waited).termination).toMatchObject({ status: "failed", error: expect.stringContaining("first end") });
      expect(await env.runtime.outcome("r2")).toMatchObject({ status: "failed", error: expect.stringContaining("first end") });
      expect(terminalReads(reads, "r2")).toBe(0);
      await env.runtime.retryRun("r2");
      const end = await env.runtime.wait("r2");
      expect(end.termination.status).toBe("succeeded");
      expect(dec(end.outcome?.result)).toBe("second end");
      expect(dec((await env.runtime.outcome("r2"))?.result)).toBe("second end");
    } finally {
      await env.stop();
    }
  });
});

describe("a wait and an outcome of a run ended elsewhere", () => {
  it("after a reopen read the end from the store", async () => {
    const env = await openEnv(runnerOf(async () => StepOutcome.succeed(enc("kept"))));
    await env.runtime.submit({ runId: "r3", input: enc("in") });
    const before = await env.runtime.wait("r3");
    const outcomeBefore = await env.runtime.outcome("r3");
    await env.stop();
    const again = await openEnv(
      runnerOf(async () => StepOutcome.succeed(enc("other"))),
      { store: env.store, start: false },
    );
    const reads = countTerminalReads(again.queue);
    try {
      expect(await again.runtime.wait("r3")).toEqual(before);
      expect(await again.runtime.outcome("r3")).toEqual(outcomeBefore);
      expect(dec(outcomeBefore?.result)).toBe("kept");
      expect(terminalReads(reads, "r3")).toBeGreaterThan(0);
    } finally {
      await again.stop();
    }
  });

  it("by another runtime's worker, or by a cancel, read the end from the store", async () => {
    // The waiter runs no worker; a second runtime over the same queue ends its runs.
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(enc(`ended ${dec(s.payload)}`))),
      { start: false },
    );
    const reads = countTerminalReads(env.queue);
    const other = WorkflowRuntime.builder(
      env.queue,
      env.store,
      runnerOf(async (s) => StepOutcome.succeed(enc(`other ended ${dec(s.payload)}`))),
      NoopTerminalHook,
    ).build();
    try {
      await env.runtime.submit({ runId: "cancelled", input: enc("x") });
      const cancelledWait = env.runtime.wait("cancelled");
      expect(await env.runtime.cancel("cancelled")).toBe(true);
      expect((await cancelledWait).termination.status).toBe("cancelled");
      expect(await env.runtime.outcome("cancelled")).toMatchObject({ status: "cancelled" });

      await env.runtime.submit({ runId: "r4", input: enc("x") });
      const waited = env.runtime.wait("r4");
      const worker = other.spawn();
      try {
        const end = await waited;
        expect(dec(end.outcome?.result)).toBe("other ended x");
        expect(dec((await env.runtime.outcome("r4"))?.result)).toBe("other ended x");
        expect(await other.outcome("r4")).toEqual(await env.runtime.outcome("r4"));
      } finally {
        await worker.shutdown();
      }
      expect(terminalReads(reads, "r4")).toBeGreaterThan(0);
      expect(terminalReads(reads, "cancelled")).toBeGreaterThan(0);
    } finally {
      await env.stop();
    }
  });
});
