/**
 * @module A fresh submission draws its run id again when a record holds it
 * (drawn-run-id-collision.test.ts), a bounded number of times: an id source
 * that repeats ids (stubbed here) ends the submission with
 * `RunIdDrawsTakenError`, nothing submitted, instead of drawing for ever;
 * a few taken ids in a row still submit.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { RunId, RunIdDrawsTakenError, StepOutcome, TaqubaError } from "taquba";
import { MAX_RUN_ID_DRAWS } from "../../runtime/workflow/runs/submit.js";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";

const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the redraw of a taken run id", () => {
  it("an id source that always draws a taken id ends in RunIdDrawsTakenError, nothing submitted", async () => {
    const env = await openEnv(echo, { start: false });
    const held = await env.runtime.submit({ input: enc("held"), runId: "held-run" });
    const draw = vi.spyOn(RunId, "generate").mockImplementation(() => held.runId);
    const err = await env.runtime.submit({ input: enc("fresh") }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunIdDrawsTakenError);
    expect(err).toBeInstanceOf(TaqubaError);
    const e = err as RunIdDrawsTakenError;
    expect(e.code).toBe("RUN_ID_DRAWS_TAKEN");
    expect(e.retryable).toBe(false);
    expect(e.draws).toBe(MAX_RUN_ID_DRAWS);
    expect(e.lastRunId).toBe("held-run");
    expect(e.queueName).toBe("workflow-steps");
    expect(e.message).toContain("pass a run id of your own");
    expect(draw).toHaveBeenCalledTimes(MAX_RUN_ID_DRAWS);
    // Nothing submitted: the held run's one step job is all the queue holds, and its input is its own.
    expect((await env.queue.view().stats("workflow-steps")).pending).toBe(1);
    draw.mockRestore();
    const worker = env.runtime.spawn();
    expect(dec((await env.runtime.wait("held-run")).outcome?.result)).toBe("held");
    // The runtime still submits once the id source draws fresh ids.
    const after = await env.runtime.submit({ input: enc("after") });
    expect(dec((await env.runtime.wait(after.runId)).outcome?.result)).toBe("after");
    await worker.shutdown();
    await env.stop();
  });

  it("a few taken ids in a row are drawn again and the run submits under the first free one", async () => {
    const env = await openEnv(echo, { start: false });
    await env.runtime.submit({ input: enc("held"), runId: "held-run" });
    const real = RunId.generate.bind(RunId);
    let calls = 0;
    const taken = MAX_RUN_ID_DRAWS - 1;
    const draw = vi.spyOn(RunId, "generate").mockImplementation((now?: number) => (++calls <= taken ? ("held-run" as RunId) : real(now)));
    const drawn = await env.runtime.submit({ input: enc("drawn") });
    expect(draw).toHaveBeenCalledTimes(taken + 1);
    expect(drawn.newlySubmitted).toBe(true);
    expect(drawn.runId).not.toBe("held-run");
    draw.mockRestore();
    const worker = env.runtime.spawn();
    expect(dec((await env.runtime.wait(drawn.runId)).outcome?.result)).toBe("drawn");
    expect(dec((await env.runtime.wait("held-run")).outcome?.result)).toBe("held");
    await worker.shutdown();
    await env.stop();
  });
});
