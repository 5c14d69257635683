/**
 * @module Step outcomes end to end: continuing, delays, succeed, fail and
 * cancel verdicts, and errors by kind.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, type Step } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

describe("step outcomes", () => {
  it("runs a single-step run to success and reports status, outcome and end", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(enc(`echo:${dec(s.payload)}`))));
    const sub = await env.runtime.submit({ input: enc("hello"), runId: "r1", options: { headers: { tenant: "acme" } } });
    expect(sub).toMatchObject({ runId: "r1", newlySubmitted: true });
    const end = await env.runtime.wait("r1");
    expect(end.termination).toMatchObject({ runId: "r1", status: "succeeded", finalStep: 0 });
    expect(dec(end.outcome!.result)).toBe("echo:hello");
    expect(end.outcome!.headers).toEqual({ tenant: "acme" });
    expect(await env.runtime.status("r1")).toMatchObject({ state: "terminated", status: "succeeded", step: 0 });
    expect(dec((await env.runtime.outcome("r1"))!.result)).toBe("echo:hello");
    await env.stop();
  });

  it("continues through steps with the previous step's payload and headers", async () => {
    const seen: Array<[number, string, string | undefined]> = [];
    const env = await openEnv(
      runnerOf(async (s: Step) => {
        seen.push([s.stepNumber, dec(s.payload), s.headers.tenant]);
        const n = Number(dec(s.payload));
        return n < 3 ? StepOutcome.continueNow(enc(String(n + 1))) : StepOutcome.succeed(enc(`done at ${s.stepNumber}`));
      }),
    );
    await env.runtime.submit({ input: enc("0"), runId: "count", options: { headers: { tenant: "t" } } });
    const end = await env.runtime.wait("count");
    expect(end.termination.finalStep).toBe(3);
    expect(dec(end.outcome!.result)).toBe("done at 3");
    expect(seen).toEqual([
      [0, "0", "t"],
      [1, "1", "t"],
      [2, "2", "t"],
      [3, "3", "t"],
    ]);
    await env.stop();
  });

  it("delays a step continued after a delay until the clock passes it", async () => {
    let ran1 = false;
    const env = await openEnv(
      runnerOf(async (s) => {
        if (s.stepNumber === 0) return StepOutcome.continueAfter(enc("later"), 60_000);
        ran1 = true;
        return StepOutcome.succeed(s.payload);
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "delayed" });
    await until(async () => (await env.runtime.status("delayed"))?.step === 1, "step 1 scheduled");
    expect(await env.runtime.status("delayed")).toMatchObject({ state: "pending", step: 1 });
    env.clock.advance(59_000);
    expect(await env.runtime.waitTimeout("delayed", 0)).toBeNull();
    expect(ran1).toBe(false);
    env.clock.advance(1_000);
    const end = await env.runtime.wait("delayed");
    expect(end.termination.status).toBe("succeeded");
    expect(ran1).toBe(true);
    await env.stop();
  });

  it("fail and cancel verdicts terminate without dead-lettering", async () => {
    const env = await openEnv(runnerOf(async (s) => (dec(s.payload) === "f" ? StepOutcome.fail("bad order") : StepOutcome.cancel("user gave up"))));
    await env.runtime.submit({ input: enc("f"), runId: "f" });
    await env.runtime.submit({ input: enc("c"), runId: "c" });
    const f = await env.runtime.wait("f");
    const c = await env.runtime.wait("c");
    expect(f.termination).toMatchObject({ status: "failed", error: "bad order", errorKind: "runner" });
    expect(c.termination).toMatchObject({ status: "cancelled", error: "user gave up", errorKind: "runner" });
    expect((await env.queue.view().stats("workflow-steps")).dead).toBe(0);
    await env.stop();
  });

  it("retries a transient error with backoff, then dead-letters at the attempt limit", async () => {
    const attempts: number[] = [];
    const last: boolean[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        attempts.push(s.attempt);
        last.push(s.isLastAttempt());
        throw StepError.transient(new Error(`flaky ${s.attempt}`));
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "t", options: { maxAttemptsPerStep: 3 } });
    await until(() => attempts.length === 1, "first attempt");
    expect(await env.runtime.waitTimeout("t", 0)).toBeNull();
    env.clock.advance(1_000);
    await until(() => attempts.length === 2, "second attempt");
    env.clock.advance(2_000);
    const end = await env.runtime.wait("t");
    expect(attempts).toEqual([1, 2, 3]);
    // Only the attempt whose transient error dead-letters the step is told so.
    expect(last).toEqual([false, false, true]);
    expect(end.termination).toMatchObject({ status: "failed", errorKind: "transient", error: "flaky 3" });
    expect(end.outcome?.status).toBe("failed");
    const dead = await env.queue.view().deadJobs("workflow-steps");
    expect(dead).toHaveLength(1);
    await env.stop();
  });

  it("dead-letters a permanent error at once", async () => {
    let calls = 0;
    const env = await openEnv(
      runnerOf(async () => {
        calls++;
        throw StepError.permanent("no such order");
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "p" });
    const end = await env.runtime.wait("p");
    expect(calls).toBe(1);
    expect(end.termination).toMatchObject({ status: "failed", errorKind: "permanent", error: "no such order" });
    expect((await env.queue.view().deadJobs("workflow-steps"))[0]?.lastError).toBe("no such order");
    await env.stop();
  });

  it("treats a thrown non-StepError as transient and a non-outcome as permanent", async () => {
    let n = 0;
    const env = await openEnv(
      runnerOf(async (s) => {
        if (s.stepNumber === 0 && n++ === 0) throw new Error("plain");
        if (s.stepNumber === 0) return StepOutcome.continueNow(enc("x"));
        return { kind: "nonsense" } as unknown as StepOutcome;
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "odd" });
    await until(() => n === 1, "first attempt");
    env.clock.advance(1_000);
    const end = await env.runtime.wait("odd");
    expect(end.termination).toMatchObject({ status: "failed", errorKind: "permanent", finalStep: 1 });
    await env.stop();
  });

  it("a hand-built continue without a valid trigger fails the run permanently", async () => {
    const env = await openEnv(runnerOf(async (s) => ({ kind: "continue", payload: s.payload }) as unknown as StepOutcome));
    await env.runtime.submit({ input: enc("x"), runId: "bad-when" });
    expect((await env.runtime.wait("bad-when")).termination).toMatchObject({ status: "failed", errorKind: "permanent" });
    await env.stop();
  });
});
