/**
 * @module A step claimed by its previous step's settlement gets the run's
 * records from that settlement (steps/step-carry.ts). It must still see
 * every change to them made since, and no runner may change what it is
 * handed.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type StepRunner } from "taquba";
import { runKey, stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, openEnv } from "./helpers.js";

/** The KV key a `kvGetNow` or `kvTokenNow` call read: the key, or a key reference's key. */
const keyOf = (k: unknown) => (typeof k === "string" ? k : (k as { key: string }).key);

describe("a step handed the run's records by the settlement that claimed it", () => {
  it("sees the run record a child start changed: failing next, the parent cancels the child", async () => {
    const seen: string[] = [];
    const runner: StepRunner = {
      async runStep(s) {
        const p = dec(s.payload);
        seen.push(p);
        if (p === "parent") {
          await s.children.start({ key: "c", input: enc("child") });
          return StepOutcome.continueNow(enc("then-fail"));
        }
        if (p === "then-fail") return StepOutcome.fail("the parent fails while its child runs");
        // The child waits for a signal no one sends.
        return StepOutcome.continueOnSignal(enc("never"), `go-${s.runId}`, 3_600_000);
      },
    };
    const env = await openEnv(runner);
    try {
      const { runId } = await env.runtime.submit({ runId: "p", input: enc("parent") });
      expect((await env.runtime.wait(runId)).termination.status).toBe("failed");
      const child = (await env.runtime.status("p-s0-c"))!;
      expect(child).not.toBeNull();
      expect((await env.runtime.wait("p-s0-c")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      expect(seen).toEqual(expect.arrayContaining(["parent", "then-fail", "child"]));
    } finally {
      await env.stop();
    }
  });

  it("sees a cancel recorded on the run record while its runner ran, before any job cancel: the run ends cancelled", async () => {
    const { decodeRunRecord, encodeRunRecord } = await import("../../runtime/workflow/records/records.js");
    const seen: string[] = [];
    let env: Awaited<ReturnType<typeof openEnv>> | undefined;
    const runner: StepRunner = {
      async runStep(s) {
        const n = Number(dec(s.payload));
        seen.push(dec(s.payload));
        if (n === 2) {
          // The first half of a cancel from elsewhere: the flag on the run record, and no job cancel (yet).
          const key = `workflow/runs/workflow-steps/${s.runId}`;
          const run = decodeRunRecord((await env!.queue.kvGet(key))!, key);
          await env!.queue.kvPut(key, encodeRunRecord({ ...run, cancelRequested: true }));
        }
        return n >= 5 ? StepOutcome.succeed(enc("done")) : StepOutcome.continueNow(enc(String(n + 1)));
      },
    };
    env = await openEnv(runner);
    try {
      const { runId } = await env.runtime.submit({ input: enc("0") });
      // Step 2's own check after its runner saw the flag: the run ends there, no step 3 is enqueued.
      expect((await env.runtime.wait(runId)).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled", finalStep: 2 });
      expect(seen).toEqual(["0", "1", "2"]);
    } finally {
      await env.stop();
    }
  });

  it("sees the step pointer moved by a commit in the turn of the settlement that claimed its step: the step is taken as a stale delivery, its runner not run", async () => {
    const { encodeStepPointer } = await import("../../runtime/workflow/records/records.js");
    const seen: string[] = [];
    let moveAfterAck = false;
    let runId = "";
    const runner: StepRunner = {
      async runStep(s) {
        const n = Number(dec(s.payload));
        seen.push(dec(s.payload));
        runId = s.runId;
        // Step 2's ack is followed by a move of the pointer (below), in the same turn as its commit.
        moveAfterAck = n === 2;
        return n >= 5 ? StepOutcome.succeed(enc("done")) : StepOutcome.continueNow(enc(String(n + 1)));
      },
    };
    const env = await openEnv(runner);
    let moved: Promise<void> | undefined;
    let staleAcked!: () => void;
    const step3Acked = new Promise<void>((r) => (staleAcked = r));
    type Settle = (...args: unknown[]) => unknown;
    const q = env.queue as unknown as { ackClaimingNextInTurn: Settle; ack: Settle };
    const ackInTurn = q.ackClaimingNextInTurn.bind(q);
    q.ackClaimingNextInTurn = (...args) => {
      const submitted = ackInTurn(...args);
      if (moveAfterAck) {
        moveAfterAck = false;
        // Another writer's commit after the ack's, before the step reads anything: the pointer names a job not step 3's.
        moved = env.queue.kvPut(stepPointerKey("workflow-steps", runId), encodeStepPointer({ step: 3, jobId: "moved-elsewhere" }));
      }
      return submitted;
    };
    const ack = q.ack.bind(q);
    q.ack = (...args) => {
      const acked = ack(...args);
      if ((args[0] as { headers: Record<string, string> }).headers["workflow.step"] === "3") staleAcked();
      return acked;
    };
    try {
      await env.runtime.submit({ input: enc("0") });
      await step3Acked;
      await moved;
      expect(seen).toEqual(["0", "1", "2"]);
      expect(await env.runtime.status(runId)).toMatchObject({ state: "running" });
    } finally {
      await env.stop();
    }
  });

  it("gets the submitted headers whatever an earlier step's runner did to the headers it was given", async () => {
    const headersSeen: Record<string, string>[] = [];
    const runner: StepRunner = {
      async runStep(s) {
        headersSeen.push({ ...s.headers });
        // A runner writing into the headers it was given (typed read-only; plain JavaScript can).
        (s.headers as Record<string, string>).planted = "by-step";
        const n = Number(dec(s.payload));
        return n >= 3 ? StepOutcome.succeed(enc("done")) : StepOutcome.continueNow(enc(String(n + 1)));
      },
    };
    const env = await openEnv(runner);
    try {
      const { runId } = await env.runtime.submit({ input: enc("0"), options: { headers: { tenant: "t1" } } });
      const end = await env.runtime.wait(runId);
      expect(end.termination.status).toBe("succeeded");
      expect(headersSeen).toEqual([{ tenant: "t1" }, { tenant: "t1" }, { tenant: "t1" }, { tenant: "t1" }]);
      expect(end.outcome?.headers).toEqual({ tenant: "t1" });
    } finally {
      await env.stop();
    }
  });

  it("reads the run record and the step pointer for a run's first step only: every later step takes them from the settlement that claimed it", async () => {
    const steps = 5;
    // Counted from step 0's runner to the last step's: the reads of steps 1 to 4, none of the submit's or wait's.
    let counting = false;
    const reads: string[] = [];
    let lastStep!: () => void;
    const reachedLast = new Promise<void>((r) => (lastStep = r));
    const runner: StepRunner = {
      async runStep(s) {
        const n = Number(dec(s.payload));
        counting = n + 1 < steps;
        if (!counting) lastStep();
        return n + 1 >= steps ? StepOutcome.succeed(enc("done")) : StepOutcome.continueNow(enc(String(n + 1)));
      },
    };
    const env = await openEnv(runner);
    const q = env.queue as unknown as { kvGetNow(k: unknown): Uint8Array | null | undefined };
    const kvGetNow = q.kvGetNow.bind(q);
    q.kvGetNow = (k) => {
      if (counting) reads.push(keyOf(k));
      return kvGetNow(k);
    };
    try {
      const { runId } = await env.runtime.submit({ input: enc("0") });
      // Waited for only after: its reads are not the steps'.
      await reachedLast;
      expect((await env.runtime.wait(runId)).termination.status).toBe("succeeded");
      // Steps 1-4 find each key's token unchanged since their claiming settlement read or wrote it: the run record
      // and the step pointer are the carried ones, neither read.
      expect(reads.filter((k) => k === runKey("workflow-steps", runId))).toEqual([]);
      expect(reads.filter((k) => k === stepPointerKey("workflow-steps", runId))).toEqual([]);
    } finally {
      await env.stop();
    }
  });
});
