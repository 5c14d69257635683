/**
 * @module What a run's terminating settlement deletes of its final step's
 * signal keys (delivered, timed out): a step that waited on a signal has
 * them deleted with its end, one that never waited writes no delete for
 * keys it never had (each would cost the commit a log entry and a tombstone).
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, StepError, type Queue, type SettlementEffects } from "taquba";
import { dec, enc, openEnv, runnerOf, until, type Env } from "./helpers.js";

const HOUR = 3_600_000;
const SIGNAL_KEYS = /workflow\/signal-(delivered|timed-out)\//;

/** What one settlement of the step queue committed: its KV ops as `put <key>` / `delete <key>`. */
type Settled = { via: string; step: string | undefined; ops: string[] };

/** Records the KV ops of every ack, dead-letter and nack the runtime submits, then passes them on. */
function recordingSettlements(settled: Settled[]): (queue: Queue) => Queue {
  return (queue) => {
    type Settle = (job: { headers: Record<string, string> }, ...rest: unknown[]) => unknown;
    const q = queue as unknown as Record<"ack" | "deadLetter" | "nack", Settle>;
    for (const via of ["ack", "deadLetter", "nack"] as const) {
      const original = q[via].bind(queue);
      q[via] = (job, ...rest) => {
        const effects = rest.find((r): r is SettlementEffects => typeof r === "object" && r !== null && "kvOps" in r);
        const ops = (effects?.kvOps ?? []).map((op) => `${"value" in op ? "put" : "delete"} ${op.key}`);
        settled.push({ via, step: job.headers["workflow.step"], ops });
        return original(job, ...rest);
      };
    }
    return queue;
  };
}

const signalOps = (s: Settled) => s.ops.filter((op) => SIGNAL_KEYS.test(op));

async function ended(env: Env, runId: string) {
  const end = await env.runtime.wait(runId);
  await env.stop();
  return end;
}

describe("a run's end and its final step's signal keys", () => {
  it("a one-step run that succeeds deletes no signal key: its end commits only its records' ops", async () => {
    const settled: Settled[] = [];
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { wrapQueue: recordingSettlements(settled) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "plain" });
    const end = await ended(env, "plain");
    expect(end.outcome?.status).toBe("succeeded");
    const last = settled.at(-1)!;
    expect(last.via).toBe("ack");
    expect(signalOps(last)).toEqual([]);
    // The run record and step pointer removed, the terminal record, the run's place in the ended index and its history entry: nothing for keys never written.
    expect(last.ops).toEqual([
      "delete workflow/runs/workflow-steps/plain",
      "delete workflow/steps/workflow-steps/plain",
      "put workflow/outcomes/workflow-steps/plain",
      expect.stringMatching(/^put workflow\/run-ended\/workflow-steps\/succeeded\/\d+plain$/),
      "put workflow/history/workflow-steps/plain/0000000000",
    ]);
  });

  it("a dead-lettered step that never waited deletes no signal key", async () => {
    const settled: Settled[] = [];
    const env = await openEnv(
      runnerOf(async () => {
        throw StepError.permanent(new Error("bad input"));
      }),
      { wrapQueue: recordingSettlements(settled) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "dead" });
    const end = await ended(env, "dead");
    expect(end.outcome?.status).toBe("failed");
    const last = settled.at(-1)!;
    expect(last.via).toBe("deadLetter");
    expect(signalOps(last)).toEqual([]);
  });

  it("a step continued at once after earlier steps deletes no signal key when it ends the run", async () => {
    const settled: Settled[] = [];
    const env = await openEnv(
      runnerOf(async (s) => (s.stepNumber < 2 ? StepOutcome.continueNow(s.payload) : StepOutcome.fail("stop"))),
      { wrapQueue: recordingSettlements(settled) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "three" });
    const end = await ended(env, "three");
    expect(end.outcome?.status).toBe("failed");
    const last = settled.at(-1)!;
    expect(last).toMatchObject({ via: "ack", step: "2" });
    expect(signalOps(last)).toEqual([]);
  });

  it("a step woken by its signal has its delivered and timed-out keys deleted with the run's end", async () => {
    const settled: Settled[] = [];
    const env = await openEnv(
      runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueOnSignal(s.payload, "approve", HOUR) : StepOutcome.succeed(s.signal ?? enc("none")))),
      { wrapQueue: recordingSettlements(settled) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "waited" });
    await until(async () => (await env.runtime.status("waited"))?.step === 1, "the run waiting on its signal");
    expect(await env.runtime.signal("approve", enc("yes"))).toBe("delivered");
    const end = await ended(env, "waited");
    expect(dec(end.outcome?.result)).toBe("yes");
    const last = settled.at(-1)!;
    expect(last).toMatchObject({ via: "ack", step: "1" });
    expect(signalOps(last).sort()).toEqual([
      "delete workflow/signal-delivered/workflow-steps/waited/1",
      "delete workflow/signal-timed-out/workflow-steps/waited/1",
    ]);
    expect(await env.queue.kvGet("workflow/signal-delivered/workflow-steps/waited/1")).toBeNull();
  });

  it("a step woken by its timeout that fails has both keys deleted with the run's end", async () => {
    const settled: Settled[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        if (s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, "late", HOUR);
        throw StepError.permanent(new Error(`signal ${String(s.signal)}`));
      }),
      { wrapQueue: recordingSettlements(settled) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "timed" });
    await until(async () => (await env.runtime.status("timed"))?.step === 1, "the run waiting on its signal");
    expect(await env.queue.kvGet("workflow/signal-timed-out/workflow-steps/timed/1")).toBeNull();
    env.clock.advance(HOUR);
    const end = await env.runtime.wait("timed");
    expect(end.outcome).toMatchObject({ status: "failed", error: expect.stringContaining("signal null") });
    const last = settled.at(-1)!;
    expect(last).toMatchObject({ via: "deadLetter", step: "1" });
    expect(signalOps(last).sort()).toEqual([
      "delete workflow/signal-delivered/workflow-steps/timed/1",
      "delete workflow/signal-timed-out/workflow-steps/timed/1",
    ]);
    // The timed-out mark the step's delivery wrote went with the run's end.
    expect(await env.queue.kvGet("workflow/signal-timed-out/workflow-steps/timed/1")).toBeNull();
    await env.stop();
  });
});
