/**
 * @module `status`, `outcome`, `wait` and `cancel` answer only from durable
 * state: a termination applied in memory whose WAL write has not landed is
 * not reported until it has, because a crash before then undoes it.
 */
import { describe, expect, it } from "vitest";
import { MemoStore, QueueReader, StepOutcome, WorkflowView } from "taquba";
import { enc, holdableStore, openEnv, runnerOf, settle, until } from "./helpers.js";

/** Whether `p` has settled after the event loop had a chance to run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await settle(20);
  return done;
}

describe("answers from durable state", () => {
  it("does not report a termination whose commit is not durable yet", async () => {
    const store = holdableStore();
    const env = await openEnv(
      runnerOf(async (s) => {
        // From here on WAL writes are held: the step's terminating ack applies in memory only.
        store.hold();
        return StepOutcome.succeed(s.payload);
      }),
      { store },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(() => store.held > 0, "the terminating ack's WAL write held");

    // What a crash now would leave: the run is still active at step 0.
    const reader = await QueueReader.open(store.inner, "wf");
    const durableView = new WorkflowView(reader, new MemoStore(store.inner, "workflow-steps-memo"));
    expect(await durableView.status("r")).toMatchObject({ state: "pending", step: 0 }); // claims are not durable either

    const status = env.runtime.status("r");
    const outcome = env.runtime.outcome("r");
    const end = env.runtime.waitTimeout("r", 60_000);
    const cancel = env.runtime.cancel("r");
    expect(await settled(status)).toBe(false);
    expect(await settled(outcome)).toBe(false);
    expect(await settled(end)).toBe(false);
    expect(await settled(cancel)).toBe(false);

    store.release();
    expect(await status).toMatchObject({ state: "terminated", status: "succeeded", step: 0 });
    expect((await outcome)?.status).toBe("succeeded");
    expect((await end)?.termination).toMatchObject({ status: "succeeded" });
    expect(await cancel).toBe(false); // too late: the committed outcome stands
    await env.stop();
  });

  it("an outcome read after a wait skips the flush only for the end the wait saw durable: a later end of the same run id waits for its write", async () => {
    const store = holdableStore();
    let holdNext = false;
    const env = await openEnv(
      runnerOf(async (s) => {
        if (holdNext) store.hold();
        return StepOutcome.succeed(s.payload);
      }),
      { store },
    );
    await env.runtime.submit({ input: enc("first"), runId: "r" });
    expect((await env.runtime.wait("r")).outcome?.status).toBe("succeeded");
    // The end the wait reported is durable: the outcome after it answers without a write in flight.
    expect((await env.runtime.outcome("r"))?.result).toEqual(enc("first"));

    // The run id submitted again; its new end is applied in memory while its WAL write is held.
    holdNext = true;
    await env.runtime.submit({ input: enc("second"), runId: "r" });
    await until(() => store.held > 0, "the second end's WAL write held");
    const outcome = env.runtime.outcome("r");
    const end = env.runtime.waitTimeout("r", 60_000);
    expect(await settled(outcome)).toBe(false);
    expect(await settled(end)).toBe(false);

    store.release();
    expect((await outcome)?.result).toEqual(enc("second"));
    expect((await end)?.outcome?.result).toEqual(enc("second"));
    // Read again after the wait that saw it durable: the same answer.
    expect((await env.runtime.outcome("r"))?.result).toEqual(enc("second"));
    await env.stop();
  });

  it("answers at once when nothing is in flight", async () => {
    const store = holdableStore();
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { store },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await env.runtime.wait("r");
    const before = env.queue.engineStats.walPuts;
    for (let i = 0; i < 50; i++) expect(await env.runtime.status("r")).toMatchObject({ state: "terminated" });
    // Nothing was in flight, so no read forced a WAL write.
    expect(env.queue.engineStats.walPuts).toBe(before);
    await env.stop();
  });
});
