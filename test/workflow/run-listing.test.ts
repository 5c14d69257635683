/**
 * @module Run listings and histories (`listRuns`, `inspectRun`) over the run
 * index: every state, filters, pages, the same answers after a restart and
 * from a read-only view, and bad options or damaged entries.
 */
import { describe, expect, it } from "vitest";
import {
  MemoryStore,
  MemoStore,
  MockClock,
  QueueReader,
  RunNotFoundError,
  StepError,
  StepOutcome,
  StoreCorruptedError,
  ValidationError,
  WorkflowView,
  type RunRow,
  type Step,
  type StepRunner,
} from "taquba";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";

const HOUR = 3_600_000;
const T0 = 1_700_000_000_000;

/**
 * The input names what the run does: `ok`, `fail`, `boom` (a permanent
 * error), `wait` (a signal on `sig:{runId}`), `sleep` (an hour's delay);
 * payloads are JSON envelopes so `describe` names workflow and step.
 */
function scriptedRunner(): StepRunner {
  return {
    describe(payload) {
      try {
        const v = JSON.parse(dec(payload)) as { wf?: string; step?: string };
        return v.wf === undefined ? undefined : { kind: "workflow", name: v.wf, ...(v.step === undefined ? {} : { step: v.step }) };
      } catch {
        return undefined;
      }
    },
    async runStep(s: Step) {
      const v = JSON.parse(dec(s.payload)) as { wf: string; what: string; step: string };
      const next = (step: string) => enc(JSON.stringify({ ...v, step }));
      if (s.stepNumber === 0) {
        await s.memo.put("charged", enc("1"));
        s.effects.put(`app/${s.runId}`, enc("seen"));
        switch (v.what) {
          case "ok":
            return StepOutcome.succeed(enc("done"));
          case "fail":
            return StepOutcome.fail("out of stock");
          case "boom":
            throw StepError.permanent(new Error("kaput"));
          case "wait":
            return StepOutcome.continueOnSignal(next("approve"), `sig:${s.runId}`, HOUR);
          case "sleep":
            return StepOutcome.continueAfter(next("later"), HOUR);
        }
      }
      return StepOutcome.succeed(s.signal ?? enc("late"));
    },
  };
}

const input = (wf: string, what: string) => enc(JSON.stringify({ wf, what, step: "start" }));

/** Submits one run per entry, a second apart, and waits until each settled its first step. */
async function populate(env: Env): Promise<void> {
  const runs: Array<[string, string, string]> = [
    ["r-ok", "orders", "ok"],
    ["r-fail", "orders", "fail"],
    ["r-boom", "billing", "boom"],
    ["r-wait", "orders", "wait"],
    ["r-sleep", "billing", "sleep"],
  ];
  for (const [runId, wf, what] of runs) {
    await env.runtime.submit({ runId, input: input(wf, what), options: { headers: { tenant: runId } } });
    await until(async () => {
      const s = await env.runtime.status(runId);
      return s !== null && (s.state === "terminated" || s.step === 1);
    }, `${runId} past step 0`);
    env.clock.advance(1000);
  }
}

const states = (rows: readonly RunRow[]) => rows.map((r) => [r.runId, r.state]);

describe("listRuns", () => {
  it("lists every run newest first with its state, step name, signal and times", async () => {
    const env = await openEnv(scriptedRunner());
    await populate(env);
    const page = await env.runtime.listRuns();
    expect(states(page.runs)).toEqual([
      ["r-sleep", "scheduled"],
      ["r-wait", "awaiting_signal"],
      ["r-boom", "failed"],
      ["r-fail", "failed"],
      ["r-ok", "succeeded"],
    ]);
    expect(page.nextCursor).toBeUndefined();
    const [sleep, wait, boom, fail, ok] = page.runs;
    expect(wait).toMatchObject({ workflow: "orders", kind: "workflow", step: 1, stepName: "approve", headers: { tenant: "r-wait" }, submittedAtMs: T0 + 3000 });
    expect(wait!.signal).toEqual({ key: "sig:r-wait", deadlineMs: T0 + 3000 + HOUR });
    expect(sleep).toMatchObject({ step: 1, stepName: "later", runAtMs: T0 + 4000 + HOUR });
    expect(boom).toMatchObject({ workflow: "billing", step: 0, stepName: "start", errorKind: "permanent", attempt: 1 });
    expect(boom!.error).toContain("kaput");
    expect(fail).toMatchObject({ error: "out of stock", errorKind: "runner" });
    expect(ok).toMatchObject({ state: "succeeded", submittedAtMs: T0, updatedAtMs: T0 });
    await env.stop();
  });

  it("filters by state, workflow and submission time, and pages with a cursor", async () => {
    const env = await openEnv(scriptedRunner());
    await populate(env);
    const rt = env.runtime;
    expect(states((await rt.listRuns({ state: "failed" })).runs)).toEqual([
      ["r-boom", "failed"],
      ["r-fail", "failed"],
    ]);
    expect(states((await rt.listRuns({ state: "awaiting_signal" })).runs)).toEqual([["r-wait", "awaiting_signal"]]);
    expect((await rt.listRuns({ workflow: "billing" })).runs.map((r) => r.runId)).toEqual(["r-sleep", "r-boom"]);
    expect((await rt.listRuns({ workflow: "orders", state: "failed" })).runs.map((r) => r.runId)).toEqual(["r-fail"]);
    expect((await rt.listRuns({ workflow: "nobody" })).runs).toEqual([]);
    // Submitted at T0+1000 .. T0+3000 (after inclusive, before exclusive).
    expect((await rt.listRuns({ submittedAfter: T0 + 1000, submittedBefore: T0 + 3001 })).runs.map((r) => r.runId)).toEqual(["r-wait", "r-boom", "r-fail"]);
    expect((await rt.listRuns({ submittedBefore: T0 + 1000 })).runs.map((r) => r.runId)).toEqual(["r-ok"]);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await rt.listRuns({ limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.runs.length).toBeLessThanOrEqual(2);
      seen.push(...page.runs.map((r) => r.runId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(seen).toEqual(["r-sleep", "r-wait", "r-boom", "r-fail", "r-ok"]);
    expect(pages).toBe(3);
    await env.stop();
  });

  it("answers the same after a restart, and from a read-only view of the bucket", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const first = await openEnv(scriptedRunner(), { store, clock });
    await populate(first);
    const before = await first.runtime.listRuns();
    const historyBefore = await first.runtime.inspectRun("r-wait");
    await first.stop();

    const second = await openEnv(scriptedRunner(), { store, clock, start: false });
    expect(await second.runtime.listRuns()).toEqual(before);
    expect(await second.runtime.inspectRun("r-wait")).toEqual(historyBefore);
    await second.stop();

    const reader = await QueueReader.open(store, "wf");
    const view = new WorkflowView(reader, new MemoStore(store, "workflow-steps-memo"));
    const fromReader = await view.listRuns();
    // A reader has no live claims to see; every row here is settled or waiting, so the rows match.
    expect(fromReader).toEqual(before);
    await reader.close();
  });

  it("sees a waiting run move on once signalled, across a restart", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const first = await openEnv(scriptedRunner(), { store, clock });
    await first.runtime.submit({ runId: "w1", input: input("orders", "wait") });
    await until(async () => (await first.runtime.listRuns({ state: "awaiting_signal" })).runs.length === 1, "w1 waiting");
    await first.stop();
    const second = await openEnv(scriptedRunner(), { store, clock });
    expect(await second.runtime.signal("sig:w1", enc("yes"))).toBe("delivered");
    await second.runtime.wait("w1");
    const rows = (await second.runtime.listRuns()).runs;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ runId: "w1", state: "succeeded", step: 1, stepName: "approve" });
    expect(rows[0]!.signal).toBeUndefined();
    await second.stop();
  });

  it("refuses absurd options with a ValidationError and changes nothing", async () => {
    const env = await openEnv(scriptedRunner());
    await populate(env);
    const rt = env.runtime;
    const bad: unknown[] = [
      { limit: 0 },
      { limit: 1001 },
      { limit: 1e30 },
      { limit: Number.NaN },
      { limit: 2.5 },
      { state: "bogus" },
      { state: "terminated" },
      { workflow: "" },
      { workflow: "x".repeat(300) },
      { submittedAfter: Number.POSITIVE_INFINITY },
      { submittedBefore: -1 },
      { submittedAfter: Number.NaN },
      { cursor: "garbage" },
      { cursor: "r1.!!!!" },
      { cursor: `r1.${Buffer.from("a|123").toString("base64url")}` },
      { cursor: 42 },
      "limit=5",
    ];
    for (const o of bad) await expect(rt.listRuns(o as never), JSON.stringify(o)).rejects.toBeInstanceOf(ValidationError);
    // A cursor of one listing is refused by a listing with other filters.
    const page = await rt.listRuns({ limit: 1 });
    await expect(rt.listRuns({ state: "failed", cursor: page.nextCursor! })).rejects.toThrow(/other filters/);
    expect((await rt.listRuns()).runs).toHaveLength(5);
    await env.stop();
  });

  it("reports a damaged index entry as unreadable and lists the others", async () => {
    const env = await openEnv(scriptedRunner());
    await populate(env);
    const entries = (await env.queue.kvScan("workflow/run-index/workflow-steps/")).entries;
    expect(entries).toHaveLength(5);
    const victim = entries.find((e) => e.key.endsWith("r-boom"))!;
    await env.queue.kvPut(victim.key, new Uint8Array([0xc1, 0xff]));
    await env.queue.kvPut("workflow/run-index/workflow-steps/not-a-suffix", enc("x"));
    const page = await env.runtime.listRuns();
    expect(page.runs.map((r) => r.runId)).toEqual(["r-sleep", "r-wait", "r-fail", "r-ok"]);
    expect(page.unreadable?.map((u) => u.runId).sort()).toEqual(["not-a-suffix", "r-boom"].sort());
    expect(page.unreadable?.find((u) => u.runId === "r-boom")?.reason).toMatch(/run index entry/);
    // The failed listing reads the same damaged entry through the ended index.
    const failed = await env.runtime.listRuns({ state: "failed" });
    expect(failed.runs.map((r) => r.runId)).toEqual(["r-fail"]);
    expect(failed.unreadable?.map((u) => u.runId)).toEqual(["r-boom"]);
    // Each carries which record is damaged and what is wrong with it, as fields.
    expect(page.unreadable?.find((u) => u.runId === "r-boom")?.damage).toEqual({ record: "index_entry", detail: expect.stringMatching(/run index entry/) });
    expect(page.unreadable?.find((u) => u.runId === "not-a-suffix")?.damage).toEqual({ record: "index_entry", detail: "its key is malformed" });
    expect(failed.unreadable?.[0]?.damage?.record).toBe("index_entry");
    // The repair rewrites the entry from the run's own records; the run is listed again, as it ended.
    expect(await env.runtime.repairRun("r-boom")).toMatchObject({ action: "index_rewritten", damaged: [{ record: "index_entry" }] });
    expect((await env.runtime.listRuns({ state: "failed" })).runs.map((r) => r.runId).sort()).toEqual(["r-boom", "r-fail"]);
    await expect(env.runtime.repairRun("r-boom")).rejects.toMatchObject({ code: "RUN_NOT_DAMAGED", reason: "ended" });
    await env.stop();
  });

  it("lists runs with the largest headers and odd-but-valid run ids, and a runner's absurd names are left out", async () => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < 32; i++) headers[`h${i}`] = "v".repeat(1000);
    const env = await openEnv({
      describe: (p) =>
        dec(p) === "long" ? { kind: "workflow", name: "n".repeat(10_000), step: "s" } : { kind: "workflow", name: "wf", step: "x".repeat(10_000) },
      runStep: async () => StepOutcome.succeed(enc("x")),
    });
    await env.runtime.submit({ runId: "_-_", input: enc("short"), options: { headers } });
    await env.runtime.submit({ runId: "A".repeat(128), input: enc("long") });
    await env.runtime.wait("_-_");
    await env.runtime.wait("A".repeat(128));
    const rows = (await env.runtime.listRuns()).runs;
    expect(rows.map((r) => r.runId).sort()).toEqual(["A".repeat(128), "_-_"].sort());
    const odd = rows.find((r) => r.runId === "_-_")!;
    expect(odd.headers).toEqual(headers);
    expect(odd.workflow).toBe("wf");
    expect(odd.stepName).toBeUndefined();
    expect(rows.find((r) => r.runId !== "_-_")!.workflow).toBeUndefined();
    await env.stop();
  });

  it("a damaged history entry is a StoreCorruptedError naming the run's records, not a wrong answer", async () => {
    const env = await openEnv(scriptedRunner());
    await env.runtime.submit({ runId: "h1", input: input("orders", "ok") });
    await env.runtime.wait("h1");
    const [entry] = (await env.queue.kvScan("workflow/history/workflow-steps/h1/")).entries;
    await env.queue.kvPut(entry!.key, enc("not messagepack"));
    await expect(env.runtime.inspectRun("h1")).rejects.toBeInstanceOf(StoreCorruptedError);
    // The listing reads the final step's entry too: the run is reported unreadable, not listed wrong.
    const page = await env.runtime.listRuns();
    expect(page.runs).toEqual([]);
    expect(page.unreadable?.map((u) => u.runId)).toEqual(["h1"]);
    await env.stop();
  });

  it("a filtered page examines a bounded number of entries and hands out a cursor", async () => {
    const env = await openEnv({ runStep: async () => StepOutcome.succeed(enc("x")) });
    for (let i = 0; i < 130; i++) {
      await env.runtime.submit({ runId: `n${String(i).padStart(3, "0")}`, input: enc("x") });
      env.clock.advance(1);
    }
    await until(async () => (await env.runtime.listRuns({ state: "succeeded", limit: 1000 })).runs.length === 130, "all succeeded");
    // None is pending: a page of `limit` 1 examines at most 110 entries, then hands out a cursor.
    const first = await env.runtime.listRuns({ state: "pending", limit: 1 });
    expect(first.runs).toEqual([]);
    expect(first.nextCursor).toBeDefined();
    const second = await env.runtime.listRuns({ state: "pending", limit: 1, cursor: first.nextCursor! });
    expect(second).toEqual({ runs: [] });
    await env.stop();
  });
});

describe("inspectRun", () => {
  it("reports each step's attempts, transition, signal, memo keys and KV effects, and the end", async () => {
    const env = await openEnv(scriptedRunner());
    await populate(env);
    const rt = env.runtime;
    const waiting = await rt.inspectRun("r-wait");
    expect(waiting).toMatchObject({ runId: "r-wait", workflow: "orders", state: "awaiting_signal", stepsDropped: 0, redrives: [] });
    expect(waiting!.end).toBeUndefined();
    const [s0, s1] = waiting!.steps;
    expect(s0).toMatchObject({
      step: 0,
      name: "start",
      attempts: [{ attempt: 1, outcome: "continued" }],
      attemptsDropped: 0,
      transition: { kind: "on_signal", key: "sig:r-wait", timeoutMs: HOUR, deadlineMs: T0 + 3000 + HOUR },
      memoKeys: ["charged"],
      memoKeysWritten: 1,
      kvPuts: ["app/r-wait"],
      kvEffects: 1,
      retryable: true,
    });
    expect(s1).toMatchObject({ step: 1, name: "approve", attempts: [], waiting: { signalKey: "sig:r-wait", untilMs: T0 + 3000 + HOUR } });

    await rt.signal("sig:r-wait", enc("approved!"));
    await rt.wait("r-wait");
    const ended = await rt.inspectRun("r-wait");
    expect(ended!.state).toBe("succeeded");
    expect(ended!.end).toMatchObject({ status: "succeeded", finalStep: 1 });
    expect(ended!.steps[1]).toMatchObject({
      step: 1,
      signal: { key: "sig:r-wait", result: "delivered", payloadBytes: 9 },
      attempts: [{ outcome: "succeeded" }],
    });

    const boom = await rt.inspectRun("r-boom");
    expect(boom!.end).toMatchObject({ status: "failed", errorKind: "permanent", finalStep: 0 });
    expect(boom!.steps[0]!.attempts[0]).toMatchObject({ outcome: "dead_lettered" });
    expect(boom!.steps[0]!.attempts[0]!.error).toContain("kaput");
    expect(boom!.steps[0]!.attempts[0]!.stack).toContain("Error: kaput");

    expect(await rt.inspectRun("never-submitted")).toBeNull();
    await expect(rt.inspectRun("../odd id")).rejects.toThrow(/run id/);
    await env.stop();
  });

  it("keeps the retried attempts with their errors in the step that finally settled", async () => {
    let calls = 0;
    const env = await openEnv(
      {
        async runStep() {
          calls++;
          if (calls < 3) throw new Error(`flaky ${calls}`);
          return StepOutcome.succeed(enc("ok"));
        },
      },
      { queueOptions: { queueConfigs: { "workflow-steps": { backoff: { baseMs: 10, maxMs: 10 } } } } },
    );
    await env.runtime.submit({ runId: "flaky", input: enc("x") });
    await until(async () => {
      env.clock.advance(20);
      return (await env.runtime.status("flaky"))?.state === "terminated";
    }, "flaky ends");
    const h = await env.runtime.inspectRun("flaky");
    expect(h!.steps[0]!.attempts.map((a) => [a.attempt, a.outcome, a.error])).toEqual([
      [1, "retried", "flaky 1"],
      [2, "retried", "flaky 2"],
      [3, "succeeded", undefined],
    ]);
    expect(h!.steps[0]!.attempts[0]!.stack).toContain("flaky 1");
    await env.stop();
  });

  it("is removed with the run by memo retention", async () => {
    const env = await openEnv(scriptedRunner(), { configure: (b) => b.memoRetention(HOUR) });
    await env.runtime.submit({ runId: "gone", input: input("orders", "fail") });
    await env.runtime.wait("gone");
    expect((await env.runtime.inspectRun("gone"))!.steps).toHaveLength(1);
    env.clock.advance(2 * HOUR);
    await env.runtime.sweepMemos();
    expect(await env.runtime.inspectRun("gone")).toBeNull();
    expect((await env.runtime.listRuns()).runs).toEqual([]);
    for (const p of ["workflow/run-index/", "workflow/run-names/", "workflow/run-ended/", "workflow/history/"]) {
      expect((await env.queue.kvScan(p)).entries, p).toEqual([]);
    }
    await expect(env.runtime.wait("gone")).rejects.toBeInstanceOf(RunNotFoundError);
    await env.stop();
  });
});
