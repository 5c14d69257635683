/**
 * @module Runs submitted before the store kept a run index are listed once
 * a worker started: the backfill gives active runs their entries and ended
 * runs an entry at their end time, once per step queue, across a restart.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome, type StepRunner } from "taquba";
import { decodeTerminalRecord, encodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { dec, enc, openEnv, until } from "./helpers.js";

const runner: StepRunner = {
  async runStep(s) {
    if (dec(s.payload) === "wait" && s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, "go", 3_600_000);
    return StepOutcome.succeed(s.payload);
  },
};

describe("run index backfill", () => {
  it("lists runs from before the index after a worker starts, active and ended, once", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const env = await openEnv(runner, { store, clock });
    await env.runtime.submit({ input: enc("done"), runId: "old-ended" });
    await env.runtime.wait("old-ended");
    const endedAt = clock.now();
    clock.advance(1_000);
    await env.runtime.submit({ input: enc("wait"), runId: "old-active" });
    await until(async () => (await env.runtime.status("old-active"))?.step === 1, "old-active waiting");
    await env.stop();

    // The state an older version left: no index entries, no backfill mark, terminal records without a submission time.
    const legacy = await openEnv(runner, { store, clock, start: false });
    for (const p of ["workflow/run-index/", "workflow/run-names/", "workflow/run-ended/", "workflow/run-index-backfilled/"]) {
      for (const e of (await legacy.queue.kvScan(p)).entries) await legacy.queue.kvDelete(e.key);
    }
    const tk = "workflow/outcomes/workflow-steps/old-ended";
    const t = decodeTerminalRecord((await legacy.queue.kvGet(tk))!, tk);
    const { submittedAtMs: _dropped, ...older } = t;
    await legacy.queue.kvPut(tk, encodeTerminalRecord(older));
    expect((await legacy.runtime.listRuns()).runs).toEqual([]);
    await legacy.stop();

    const env2 = await openEnv(runner, { store, clock });
    await until(async () => (await env2.runtime.listRuns()).runs.length === 2, "both runs listed");
    const rows = (await env2.runtime.listRuns()).runs;
    expect(rows.map((r) => [r.runId, r.state])).toEqual([
      ["old-active", "awaiting_signal"],
      ["old-ended", "succeeded"],
    ]);
    expect(rows[1]!.submittedAtMs).toBe(endedAt);
    expect((await env2.runtime.listRuns({ state: "succeeded" })).runs.map((r) => r.runId)).toEqual(["old-ended"]);
    expect(decodeTerminalRecord((await env2.queue.kvGet(tk))!, tk).submittedAtMs).toBe(endedAt);
    // The active run keeps going and ends listed.
    expect(await env2.runtime.signal("go", enc("now"))).toBe("delivered");
    await env2.runtime.wait("old-active");
    expect((await env2.runtime.listRuns({ state: "succeeded" })).runs.map((r) => r.runId)).toEqual(["old-active", "old-ended"]);
    await env2.stop();

    // Once: a later start reads the mark only and leaves the entries as they are.
    const env3 = await openEnv(runner, { store, clock });
    expect((await env3.runtime.listRuns()).runs).toHaveLength(2);
    expect((await env3.queue.kvScan("workflow/run-index-backfilled/")).entries).toHaveLength(1);
    await env3.stop();
  });
});
