/**
 * @module A run listing's row of an ended run, read while `Array.prototype`
 * or `Object.prototype` holds an attempt under the index "-1" (as merging
 * a parsed `{"__proto__": {"-1": ...}}` sets it). The row's attempt is the
 * last of its final step's history entry; an entry with no attempts (which
 * this version never writes, and decodes) was read at index -1, so the row
 * showed the prototype's attempt instead of 0. Read by the list's length
 * now.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, QueueReader, StepOutcome, WorkflowView } from "taquba";
import { decodeStepRecord, encodeStepRecord } from "../../runtime/workflow/runs/history-records.js";
import { INDEXED_PROTOTYPES, whileIndexed } from "../support/polluted-prototype.js";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

describe("a run listing's row of an ended run whose final step lists no attempt", () => {
  for (const [name, target] of INDEXED_PROTOTYPES) {
    it(`shows attempt 0, not an attempt at index -1 of ${name}`, async () => {
      const store = new MemoryStore();
      const env = await openEnv(
        runnerOf(async () => StepOutcome.succeed(enc("done"))),
        { store },
      );
      await env.runtime.submit({ runId: "r1", input: enc("x") });
      await until(async () => (await env.runtime.status("r1"))?.state === "terminated", "r1 ended");
      await env.stop();

      const reader = await QueueReader.open(store, "wf");
      // The final step's history entry as this version reads it, with its attempts left out.
      const source = {
        kvGet: async (key: string) => {
          const bytes = await reader.kvGet(key);
          if (bytes === null || !key.includes("r1/")) return bytes;
          let record: ReturnType<typeof decodeStepRecord>;
          try {
            record = decodeStepRecord(bytes, key);
          } catch {
            return bytes;
          }
          return encodeStepRecord({ ...record, attempts: [] });
        },
        job: (id: string) => reader.job(id),
        kvScan: (prefix: string, opts?: Parameters<typeof reader.kvScan>[1]) => reader.kvScan(prefix, opts),
      };
      const view = new WorkflowView(source, new MemoStore(store, "workflow-steps-memo"));
      const clean = await view.listRuns();
      expect(clean.runs.map((r) => [r.runId, r.state, r.attempt])).toEqual([["r1", "succeeded", 0]]);
      await whileIndexed(target, "-1", { attempt: 7, startedAtMs: 1, endedAtMs: 2 }, async () => {
        const polluted = await view.listRuns();
        expect(polluted.runs.map((r) => [r.runId, r.state, r.attempt])).toEqual([["r1", "succeeded", 0]]);
      });
      await reader.close();
    });
  }
});
