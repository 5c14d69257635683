/**
 * @module A run id the runtime draws that a record already holds. Ids drawn
 * within one millisecond count up by one (a MockClock that is not advanced
 * keeps them in one), so a caller's submission can name the id the next
 * fresh submission draws. The fresh submission reads nothing under its id
 * and takes no lock, so its commit is what must refuse the id: it then
 * draws another, and neither run loses its input, records or outcome.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";
import { nextUlid } from "../support/next-ulid.js";

const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

describe("a drawn run id a caller's submission holds", () => {
  it("while the caller's run is pending: the fresh submission draws another id and both runs keep their inputs", async () => {
    const env = await openEnv(echo, { start: false });
    const first = await env.runtime.submit({ input: enc("first") });
    const taken = nextUlid(first.runId);
    const callers = await env.runtime.submit({ input: enc("caller"), runId: taken });
    const drawn = await env.runtime.submit({ input: enc("drawn") });
    // Without the check in the commit: step 0's dedup key made it a duplicate of the caller's run, its input dropped.
    expect(drawn.runId).not.toBe(taken);
    expect(drawn.newlySubmitted).toBe(true);
    expect(drawn.jobId).not.toBe(callers.jobId);
    const worker = env.runtime.spawn();
    expect(dec((await env.runtime.wait(taken)).outcome?.result)).toBe("caller");
    expect(dec((await env.runtime.wait(drawn.runId)).outcome?.result)).toBe("drawn");
    expect(dec((await env.runtime.wait(first.runId)).outcome?.result)).toBe("first");
    await worker.shutdown();
    await env.stop();
  });

  it("once the caller's run ended: the fresh submission leaves its outcome and draws another id", async () => {
    const env = await openEnv(echo);
    const first = await env.runtime.submit({ input: enc("first") });
    const taken = nextUlid(first.runId);
    await env.runtime.submit({ input: enc("caller"), runId: taken });
    expect(dec((await env.runtime.wait(taken)).outcome?.result)).toBe("caller");
    const drawn = await env.runtime.submit({ input: enc("drawn") });
    // Without the check: the caller's ended run was replaced, its outcome gone and its index entries left behind.
    expect(drawn.runId).not.toBe(taken);
    expect(drawn.newlySubmitted).toBe(true);
    expect(dec((await env.runtime.wait(drawn.runId)).outcome?.result)).toBe("drawn");
    expect(dec((await env.runtime.outcome(taken))?.result)).toBe("caller");
    await env.stop();
  });

  it("a caller's submission and a fresh one drawing its id at once: one run each, each with its own input", async () => {
    const env = await openEnv(echo, { start: false });
    const first = await env.runtime.submit({ input: enc("first") });
    const taken = nextUlid(first.runId);
    // Started in one turn: the fresh one takes no lock, so neither waits for the other before its commit.
    const [callers, drawn] = await Promise.all([env.runtime.submit({ input: enc("caller"), runId: taken }), env.runtime.submit({ input: enc("drawn") })]);
    expect(callers).toMatchObject({ runId: taken, newlySubmitted: true });
    expect(drawn.newlySubmitted).toBe(true);
    expect(drawn.runId).not.toBe(taken);
    const worker = env.runtime.spawn();
    expect(dec((await env.runtime.wait(taken)).outcome?.result)).toBe("caller");
    expect(dec((await env.runtime.wait(drawn.runId)).outcome?.result)).toBe("drawn");
    await worker.shutdown();
    await env.stop();
  });

  it("a debounced fresh submission draws another id too", async () => {
    const env = await openEnv(echo, { start: false });
    const first = await env.runtime.submit({ input: enc("first") });
    const taken = nextUlid(first.runId);
    await env.runtime.submit({ input: enc("caller"), runId: taken });
    const drawn = await env.runtime.submit({ input: enc("drawn"), options: { debounce: { key: "k", periodMs: 1000 } } });
    expect(drawn.runId).not.toBe(taken);
    expect(drawn.newlySubmitted).toBe(true);
    const worker = env.runtime.spawn();
    expect(dec((await env.runtime.wait(taken)).outcome?.result)).toBe("caller");
    env.clock.advance(1000);
    expect(dec((await env.runtime.wait(drawn.runId)).outcome?.result)).toBe("drawn");
    await worker.shutdown();
    await env.stop();
  });
});
