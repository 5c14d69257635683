/**
 * @module A step claimed by its previous step's settlement gets the run's
 * records from that settlement (steps/step-carry.ts). It must still see
 * every change to them made since, and no runner may change what it is
 * handed.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv } from "./helpers.js";

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
});
