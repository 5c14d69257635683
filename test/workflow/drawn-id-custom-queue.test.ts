/**
 * @module A custom `WorkflowQueue` that draws its step jobs' ids from one
 * queue and commits them on another. A continuing step's next job is
 * staged as a drawn id; the committing queue did not hand it out, so it
 * looks the id up: a caller's job that holds it on the committing queue
 * refuses that settlement, the runtime draws again and the run goes on,
 * and the caller's job stays as it was instead of being overwritten.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, StepOutcome } from "taquba";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";

const T0 = 1_700_000_000_000;

describe("a WorkflowQueue drawing ids from one queue and committing on another", () => {
  it("a caller's job on the committing queue holding a drawn id is kept, and the run continues under another id", async () => {
    // The drawing queue's clock runs ahead: its ids lie between the committing queue's own draws.
    const drawing = await Queue.open(new MemoryStore(), "other", { flushIntervalMs: 0, clock: new MockClock(T0 + 2) });
    const state = { armed: false, taken: undefined as string | undefined };
    const runner = runnerOf(async (s) => {
      if (s.stepNumber === 0) {
        // The next draw is this step's next job's: a caller's job takes the id before the settlement commits.
        state.armed = true;
        return StepOutcome.continueNow(enc("next"));
      }
      return StepOutcome.succeed(enc(`done at ${s.stepNumber}`));
    });
    const env = await openEnv(runner, {
      wrapQueue: (committing) =>
        new Proxy(committing, {
          get(target, name) {
            if (name === "nextJobId")
              return () => {
                const id = drawing.nextJobId();
                if (state.armed) {
                  state.armed = false;
                  state.taken = id;
                  // Both build their commits in this turn: the caller's job holds the id, and a later id is generated past it.
                  void target.enqueue("callers", enc("the caller's"), { jobId: id });
                  void target.enqueue("noise", enc("later"));
                }
                return id;
              };
            const v = Reflect.get(target, name, target) as unknown;
            return typeof v === "function" ? v.bind(target) : v;
          },
        }),
    });
    try {
      // A generated id before the drawing queue's: the committing queue's first draw.
      await env.queue.enqueue("noise", enc("first"));
      env.clock.advance(4);
      await env.runtime.submit({ runId: "r1", input: enc("in") });
      const end = await env.runtime.wait("r1");
      expect(end.outcome?.status).toBe("succeeded");
      expect(dec(end.outcome?.result)).toBe("done at 1");
      expect(state.taken).toBeDefined();
      const callers = await env.queue.claim("callers");
      expect(callers === null ? undefined : [callers.id, dec(callers.payload)]).toEqual([state.taken, "the caller's"]);
    } finally {
      await env.stop();
      await drawing.close();
    }
  });
});
