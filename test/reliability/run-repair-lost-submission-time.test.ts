/**
 * @module `repairRun` over records whose submission time no longer reads
 * (the run record's, or an ended run's end record's): the listing entry's
 * key holds that time, so a repair that took its own clock instead ended
 * the run under a time no entry names, and the run vanished from every
 * listing (it was listed as unreadable before the repair). The repaired
 * run must list once, as failed, under its submission time. A rewritten
 * end also moves the run from the listing of the status it ended with to
 * the failed one.
 */
import { describe, expect, it } from "vitest";
import { pack, unpack } from "msgpackr";
import { StepOutcome } from "taquba";
import { runKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { enc, openEnv, runnerOf, until } from "../workflow/helpers.js";

const Q = "workflow-steps";
const SUBMITTED_AT = 1_700_000_000_000;

async function damageSubmittedAt(env: Awaited<ReturnType<typeof openEnv>>, key: string): Promise<void> {
  const bytes = await env.queue.kvGet(key);
  expect(bytes).not.toBeNull();
  const fields = unpack(bytes!) as Record<string, unknown>;
  expect(fields["submittedAtMs"]).toBe(SUBMITTED_AT);
  fields["submittedAtMs"] = "soon";
  await env.queue.kvPut(key, new Uint8Array(pack(fields)));
}

async function listedIds(env: Awaited<ReturnType<typeof openEnv>>, state?: "failed" | "succeeded" | "cancelled"): Promise<string[]> {
  const page = await env.runtime.listRuns(state === undefined ? {} : { state });
  expect(page.unreadable).toBeUndefined();
  return page.runs.map((r) => `${r.runId}:${r.state}:${r.submittedAtMs}`);
}

describe("repairRun over records that lost their submission time", () => {
  it("lists an active run it ended under its submission time, in the full and the failed listing", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    try {
      await env.runtime.submit({ runId: "lost-time", input: enc("x"), options: { headers: { tenant: "acme" } } });
      await env.runtime.submit({ runId: "healthy", input: enc("x") });
      await damageSubmittedAt(env, runKey(Q, "lost-time"));
      const before = await env.runtime.listRuns({});
      expect(before.unreadable?.map((u) => u.damage?.record)).toEqual(["run_record"]);
      env.clock.advance(5000);
      const out = await env.runtime.repairRun("lost-time");
      expect(out).toMatchObject({ action: "ended_failed", damaged: [{ record: "run_record" }] });
      expect((await listedIds(env)).sort()).toEqual([`healthy:pending:${SUBMITTED_AT}`, `lost-time:failed:${SUBMITTED_AT}`]);
      expect(await listedIds(env, "failed")).toEqual([`lost-time:failed:${SUBMITTED_AT}`]);
      const row = (await env.runtime.listRuns({ state: "failed" })).runs[0]!;
      expect(row.headers).toEqual({ tenant: "acme" });
      expect(row.error).toMatch(/^repaired by an operator: its run record was damaged/);
    } finally {
      await env.stop();
    }
  });

  it("lists an ended run whose end record it rewrote under its submission time", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    try {
      await env.runtime.submit({ runId: "lost-end-time", input: enc("x") });
      await env.runtime.submit({ runId: "healthy", input: enc("x") });
      await until(async () => (await env.runtime.listRuns({ state: "succeeded" })).runs.length === 2, "both runs succeeded");
      await damageSubmittedAt(env, terminalRecordKey(Q, "lost-end-time"));
      env.clock.advance(5000);
      const out = await env.runtime.repairRun("lost-end-time");
      expect(out).toMatchObject({ action: "end_rewritten", damaged: [{ record: "end_record" }] });
      expect((await listedIds(env)).sort()).toEqual([`healthy:succeeded:${SUBMITTED_AT}`, `lost-end-time:failed:${SUBMITTED_AT}`]);
      expect(await listedIds(env, "failed")).toEqual([`lost-end-time:failed:${SUBMITTED_AT}`]);
      expect(await listedIds(env, "succeeded")).toEqual([`healthy:succeeded:${SUBMITTED_AT}`]);
      await expect(env.runtime.repairRun("lost-end-time")).rejects.toMatchObject({ code: "RUN_NOT_DAMAGED" });
    } finally {
      await env.stop();
    }
  });

  it("moves a rewritten end's run from the listing of its old status to the failed one", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    try {
      await env.runtime.submit({ runId: "was-cancelled", input: enc("x") });
      await env.runtime.cancel("was-cancelled");
      expect(await listedIds(env, "cancelled")).toEqual([`was-cancelled:cancelled:${SUBMITTED_AT}`]);
      const key = terminalRecordKey(Q, "was-cancelled");
      const fields = unpack((await env.queue.kvGet(key))!) as Record<string, unknown>;
      fields["finalStep"] = -1;
      await env.queue.kvPut(key, new Uint8Array(pack(fields)));
      expect(await env.runtime.repairRun("was-cancelled")).toMatchObject({ action: "end_rewritten" });
      expect(await listedIds(env, "cancelled")).toEqual([]);
      expect(await listedIds(env, "failed")).toEqual([`was-cancelled:failed:${SUBMITTED_AT}`]);
    } finally {
      await env.stop();
    }
  });
});
