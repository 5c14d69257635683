/**
 * @module The runtime's own reads of a run's records (its status, outcome
 * and waits) decode the queue's values without copying them first
 * (`Queue.kvBorrowNow`). What they answer must be the caller's alone: a
 * result changed by the caller changes no later answer, nor what a reader
 * elsewhere or a restarted runtime reads. And they answer as a view over
 * the queue's copying reads does, for an active, a terminated and an
 * unknown run. With record paging and without it (the engine then holds
 * each value as the array committed).
 */
import { describe, expect, it } from "vitest";
import { MemoStore, StepOutcome, WorkflowView, type OpenOptions } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

// Without record paging the engine holds each value as the array committed: a result decoded as a view of it would be the engine's.
describe.each([
  ["with record paging", {}],
  ["without record paging", { recordCacheBytes: null }],
] as [string, OpenOptions][])("the runtime's own reads of a run's records (%s)", (_label, queueOptions) => {
  it("hand out results of the caller's own and answer as a copying view does", async () => {
    let release: (() => void) | undefined;
    const runner = runnerOf(async (step) => {
      if (dec(step.payload) === "held") await new Promise<void>((r) => (release = r));
      return StepOutcome.succeed(enc(`result of ${dec(step.payload)}`));
    });
    const env = await openEnv(runner, { queueOptions });
    try {
      // Without `kvBorrowNow`, a view over the queue's own view reads copies.
      const copying = new WorkflowView(env.queue.view(), new MemoStore(env.store, "workflow-steps-memo"));
      await env.runtime.submit({ runId: "done", input: enc("done") });
      await env.runtime.submit({ runId: "held", input: enc("held") });
      const end = await env.runtime.wait("done");
      expect(dec(end.outcome!.result!)).toBe("result of done");
      end.outcome!.result!.fill(0x21);
      const outcome = await env.runtime.outcome("done");
      expect(dec(outcome!.result!)).toBe("result of done");
      outcome!.result!.fill(0x21);
      expect(dec((await env.runtime.outcome("done"))!.result!)).toBe("result of done");
      expect(dec((await env.runtime.wait("done")).outcome!.result!)).toBe("result of done");
      expect(dec((await copying.outcome("done"))!.result!)).toBe("result of done");

      await until(() => release !== undefined, "the held run at its step");
      for (const id of ["done", "held", "never"]) {
        expect(await env.runtime.status(id), id).toEqual(await copying.status(id));
        expect(await env.runtime.outcome(id), id).toEqual(await copying.outcome(id));
        // The copying view keeps the run record's bytes beside what it decoded.
        expect(await copying.state(id), id).toMatchObject(await env.runtime.view().state(id));
      }
      expect((await env.runtime.status("held"))?.state).toBe("running");
      release!();
      expect(dec((await env.runtime.wait("held")).outcome!.result!)).toBe("result of held");
    } finally {
      release?.();
      await env.stop();
    }

    // What the changed results would have reached: a restarted runtime reads them as written.
    const again = await openEnv(runner, { store: env.store, clock: env.clock, queueOptions });
    try {
      expect(dec((await again.runtime.outcome("done"))!.result!)).toBe("result of done");
    } finally {
      await again.stop();
    }
  });
});
