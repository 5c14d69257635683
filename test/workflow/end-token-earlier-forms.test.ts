/**
 * @module Run ends an earlier version wrote, read by this one: a dead-step
 * reconciliation of a job named with digits had the token `dead:<id>`
 * (now `dead:<id>:r0`, so that no delivery token of a job named "dead"
 * equals it). The earlier form still names its job: an inspection shows
 * the dead step from the job's attempts, a redrive requeues that job, and
 * the outcome is the termination, as before.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StepError, StepOutcome, type StepRunner } from "taquba";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeTerminalRecord, encodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { stepHistoryKey } from "../../runtime/workflow/runs/history-records.js";
import { dec, enc, openEnv } from "./helpers.js";
import { namingQueue } from "./fixtures/naming-queue.js";

const STEPS = "workflow-steps";

describe("a reconciled end in the form of an earlier version", () => {
  for (const token of ["dead:5", "dead:5:r1"]) {
    it(`${token}: inspected, redriven and read as the end of dead job 5`, async () => {
      let healed = false;
      const runner: StepRunner = {
        async runStep(s) {
          if (!healed) throw StepError.permanent("step failed");
          return StepOutcome.succeed(enc(`${s.runId} done`));
        },
      };
      const store = new MemoryStore();
      const first = await openEnv(runner, { store, wrapQueue: namingQueue(["5"]), queueOptions: { queueConfigs: { [STEPS]: { maxAttempts: 1 } } } });
      await first.runtime.submit({ input: enc("x"), runId: "a" });
      await first.runtime.wait("a");
      // What an earlier version's reconciliation left: the run failed as dead-lettered under its token, with no history entry for the step.
      const tk = terminalRecordKey(STEPS, "a");
      const t = decodeTerminalRecord((await first.queue.kvGet(tk))!, tk);
      await first.queue.kvPut(tk, encodeTerminalRecord({ ...t, token, errorKind: "dead_lettered", error: "lease expired", inline: undefined }));
      await first.queue.kvDelete(stepHistoryKey(STEPS, "a", 0));
      await first.stop();

      const env = await openEnv(runner, { store });
      try {
        expect(await env.runtime.outcome("a")).toMatchObject({ status: "failed", errorKind: "dead_lettered", error: "lease expired", finalStep: 0 });
        const history = await env.runtime.inspectRun("a");
        expect(history?.steps).toHaveLength(1);
        expect(history?.steps[0]).toMatchObject({ step: 0, retryable: true, attempts: [expect.objectContaining({ attempt: 1 })] });

        healed = true;
        await env.runtime.retryRun("a");
        expect(dec((await env.runtime.wait("a")).outcome?.result)).toBe("a done");
        expect((await env.queue.view().job("5"))?.state).not.toBe("dead");
        expect((await env.runtime.inspectRun("a"))?.redrives).toHaveLength(1);
      } finally {
        await env.stop();
      }
    });
  }
});
