/**
 * @module The job that wakes a parent when its child ends can be
 * dead-lettered by the queue itself (its lease expired past its attempt
 * limit: a worker that stalled or died while it ran; it inherits the
 * child's attempt limit, which may be 1). The child's end is then buffered
 * for the parent, whose step waits with no timeout: dead-step
 * reconciliation must wake it, at the next start and while the worker runs.
 */
import { describe, expect, it } from "vitest";
import { MockClock, StepOutcome, type Queue, type StepRunner } from "taquba";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";

const CHILD_ENDED = "workflow.child_ended";
/** The queue logs the dead-letter this test causes on purpose. */
const quiet = { queueOptions: { logger: { error: () => undefined } } };

/** A parent that starts one child (one attempt per step) and waits for it; the child waits for a signal. */
const runner: StepRunner = {
  async runStep(s) {
    const p = dec(s.payload);
    if (p === "parent") {
      const c = await s.children.start({ input: enc("child"), options: { maxAttemptsPerStep: 1 } });
      return StepOutcome.continueOnChild(enc("join"), c.completionKey);
    }
    if (p === "join") {
      const o = await s.children.outcome(s.signal as Uint8Array);
      return StepOutcome.succeed(enc(`${o.runId}:${o.status}`));
    }
    return StepOutcome.continueOnSignal(enc("never"), `go-${s.runId}`, 3_600_000);
  },
};

/** Claims the wake job of the parent (putting back anything else) and lets its lease run out: the queue dead-letters it. */
/** The parent's end once it is there, in real time (bounded): a parent left parked fails the test, not hangs it. */
async function endOf(env: Env, runId: string): Promise<string> {
  try {
    await until(async () => (await env.runtime.outcome(runId)) !== null, `run ${runId} ends`, 3000);
  } catch {
    return `still ${JSON.stringify(await env.runtime.status(runId))}`;
  }
  const o = await env.runtime.outcome(runId);
  return `${o?.status}:${dec(o?.result)}`;
}

async function deadLetterWakeJob(queue: Queue, clock: MockClock): Promise<string> {
  const others = [];
  let wake;
  for (;;) {
    const j = await queue.claim("workflow-steps", 1000);
    if (j === null) break;
    if (j.headers[CHILD_ENDED] !== undefined) {
      wake = j;
      break;
    }
    others.push(j);
  }
  for (const j of others) queue.releaseClaim(j);
  expect(wake, "the child's end enqueued a wake job").toBeDefined();
  clock.advance(2000);
  await queue.runMaintenance();
  expect((await queue.view().job(wake!.id))?.state).toBe("dead");
  return wake!.id;
}

describe("a dead-lettered child-ended job", () => {
  it("still wakes the parent: at the next start", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const first = await openEnv(runner, { clock, ...quiet });
    await first.runtime.submit({ runId: "p", input: enc("parent") });
    const waiting = async () => (await first.runtime.status("p"))?.step === 1 && (await first.runtime.status("p-s0-0"))?.step === 1;
    await until(waiting, "the family waits");
    await first.worker?.shutdown();
    // No worker: the child is cancelled, its end buffered for the parent, and the wake job dies.
    expect(await first.runtime.cancel("p-s0-0")).toBe(true);
    await deadLetterWakeJob(first.queue, clock);
    await first.queue.close();

    const second = await openEnv(runner, { clock, store: first.store, ...quiet });
    try {
      expect(await endOf(second, "p")).toBe("succeeded:p-s0-0:cancelled");
    } finally {
      await second.stop();
    }
  });

  it("still wakes the parent: while the worker runs", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const env = await openEnv(runner, { clock, ...quiet });
    try {
      await env.runtime.submit({ runId: "q", input: enc("parent") });
      const waiting = async () => (await env.runtime.status("q"))?.step === 1 && (await env.runtime.status("q-s0-0"))?.step === 1;
      await until(waiting, "the family waits");
      await env.worker?.shutdown();
      expect(await env.runtime.cancel("q-s0-0")).toBe(true);
      // The wake job is claimed by a worker that then stalls; a running worker sees it dead-lettered.
      const live = env.runtime.spawn();
      try {
        await deadLetterWakeJob(env.queue, clock);
        expect(await endOf(env, "q")).toBe("succeeded:q-s0-0:cancelled");
      } finally {
        await live.shutdown();
      }
    } finally {
      await env.queue.close();
    }
  });
});
