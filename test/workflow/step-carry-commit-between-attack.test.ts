/**
 * @module Commits between a continuing step's ack and the start of the step
 * it claimed, which takes the step pointer by the token its ack took: a
 * cancel begun in the ack's turn, the pointer moved away and back to the
 * same bytes (equal tokens mean equal bytes, so the step runs as if nothing
 * moved), and the pointer moved to another job and back to the claimed one
 * by later commits. Every run ends once, with its outcome agreeing with its
 * status, and no step runs for a pointer that names another job.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type StepRunner } from "taquba";
import { encodeStepPointer } from "../../runtime/workflow/records/records.js";
import { stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";

type Settle = (...args: unknown[]) => unknown;

/** A runner of six steps (0-5) noting each step it ran in `seen` and its run's id in `runIds[0]`. */
function counting(seen: number[], runIds: string[]): StepRunner {
  return {
    async runStep(s) {
      const n = Number(dec(s.payload));
      seen.push(n);
      runIds[0] = s.runId;
      return n >= 5 ? StepOutcome.succeed(enc("done")) : StepOutcome.continueNow(enc(String(n + 1)));
    },
  };
}

/** Calls `between()` in the turn of each continuing ack that claimed its next step, right after the ack's commit. */
function afterEachChainedAck(env: Env, between: () => void): void {
  const q = env.queue as unknown as { ackClaimingNextInTurn: Settle };
  const ackInTurn = q.ackClaimingNextInTurn.bind(q);
  q.ackClaimingNextInTurn = (...args) => {
    const submitted = ackInTurn(...args);
    between();
    return submitted;
  };
}

describe("a commit between a step's ack and the start of the step it claimed", () => {
  it("a cancel begun in the ack's turn: the run ends cancelled once, no later step runs after it, outcome() agrees", async () => {
    for (const atStep of [0, 2, 4]) {
      const seen: number[] = [];
      const runIds: string[] = [];
      const env = await openEnv(counting(seen, runIds));
      let cancel: Promise<boolean> | undefined;
      afterEachChainedAck(env, () => {
        if (cancel === undefined && seen.at(-1) === atStep) cancel = env.runtime.cancel(runIds[0]!);
      });
      try {
        const { runId } = await env.runtime.submit({ input: enc("0"), options: { headers: { at: String(atStep) } } });
        const end = await env.runtime.wait(runId);
        expect(await cancel).toBe(true);
        expect(end.termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
        const finalStep = end.termination.finalStep;
        // The step the ack claimed is where the run ended; a runner that started before the cancel landed ran at most once.
        expect(finalStep).toBe(atStep + 1);
        expect(seen.filter((n) => n > finalStep)).toEqual([]);
        expect(new Set(seen).size).toBe(seen.length);
        const outcome = await env.runtime.outcome(runId);
        expect(outcome).toMatchObject({ runId, status: "cancelled", errorKind: "cancelled", finalStep, headers: { at: String(atStep) } });
        expect(end.outcome).toEqual(outcome);
      } finally {
        await env.stop();
      }
    }
  });

  it("the pointer moved away and back to the same bytes: the claimed step runs once and the run succeeds", async () => {
    const seen: number[] = [];
    const runIds: string[] = [];
    const env = await openEnv(counting(seen, runIds));
    const writes: Promise<void>[] = [];
    afterEachChainedAck(env, () => {
      if (seen.at(-1) !== 2) return;
      const key = stepPointerKey("workflow-steps", runIds[0]!);
      const now = env.queue.kvGetNow(key);
      if (now === null || now === undefined) throw new Error("the pointer the ack wrote is not readable in its turn");
      const same = Uint8Array.from(now);
      writes.push(env.queue.kvPut(key, encodeStepPointer({ step: 3, jobId: "moved-elsewhere" })));
      writes.push(env.queue.kvPut(key, same));
    });
    try {
      const { runId } = await env.runtime.submit({ input: enc("0") });
      const end = await env.runtime.wait(runId);
      await Promise.all(writes);
      expect(writes).toHaveLength(2);
      expect(end.termination.status).toBe("succeeded");
      expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
      expect(dec(end.outcome?.result)).toBe("done");
    } finally {
      await env.stop();
    }
  });

  it("the pointer moved to another job by a commit after the ack: the claimed step is stale, its runner does not run, the run stays active", async () => {
    const seen: number[] = [];
    const runIds: string[] = [];
    const env = await openEnv(counting(seen, runIds));
    const writes: Promise<void>[] = [];
    afterEachChainedAck(env, () => {
      if (seen.at(-1) !== 1 || writes.length > 0) return;
      // Two commits: the token the ack took is of neither value now.
      const key = stepPointerKey("workflow-steps", runIds[0]!);
      writes.push(env.queue.kvPut(key, encodeStepPointer({ step: 2, jobId: "first-move" })));
      writes.push(env.queue.kvPut(key, encodeStepPointer({ step: 2, jobId: "second-move" })));
    });
    try {
      await env.runtime.submit({ input: enc("0") });
      await Promise.all(writes);
      // The claimed step's job is acked as stale: wait until the queue holds no job of the run.
      await until(async () => {
        const { claimed, pending } = await env.queue.view().stats("workflow-steps");
        return claimed + pending === 0;
      }, "the stale step acked");
      expect(seen).toEqual([0, 1]);
      expect(await env.runtime.status(runIds[0]!)).toMatchObject({ state: "running" });
      expect(await env.runtime.outcome(runIds[0]!)).toBeNull();
    } finally {
      await env.stop();
    }
  });
});
