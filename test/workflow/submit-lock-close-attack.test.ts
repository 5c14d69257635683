/**
 * @module A run's submit lock whose holder does not settle (its commit's
 * WAL write held by the store) while other submissions of the run queue
 * behind it, and the queue closed meanwhile: nothing answers early or
 * wrongly while the write is held, and once the store answers the holder
 * and every waiter settle as if in turn (the first submits, the same input
 * finds that run, another input is refused), the close ends, and a later
 * submission is refused as closed instead of waiting on the lock.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, InputMismatchError } from "taquba";
import { enc, holdableStore, openEnv, runnerOf } from "./helpers.js";

type Settled = { ok: unknown } | { err: unknown };
const settledOf = (p: Promise<unknown>): Promise<Settled> =>
  p.then(
    (ok) => ({ ok }),
    (err: unknown) => ({ err }),
  );

/** Turns of the event loop, enough for any settlement that is not waiting on the store to happen. */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

describe("a submit lock whose holder does not settle", () => {
  it("keeps its waiters waiting until the store answers, then settles each in turn, and the close ends; a new run after it is refused as closed", async () => {
    const store = holdableStore();
    const env = await openEnv(
      runnerOf(async () => ({ kind: "succeed", result: enc("ok") })),
      { store, start: false },
    );
    store.hold();
    const calls = [
      env.runtime.submit({ runId: "order-1", input: enc("a") }),
      env.runtime.submit({ runId: "order-1", input: enc("a") }),
      env.runtime.submit({ runId: "order-1", input: enc("b") }),
      env.runtime.submit({ runId: "order-2", input: enc("a") }),
    ];
    const outcomes: (Settled | undefined)[] = calls.map(() => undefined);
    calls.forEach((p, i) => void settledOf(p).then((s) => (outcomes[i] = s)));
    let closed: unknown;
    await turns();
    expect(store.held).toBeGreaterThan(0);
    const closing = env.queue.close().then(
      () => (closed = "closed"),
      (e: unknown) => (closed = e),
    );
    await turns();
    // The holder's write is held: nobody is answered, neither the waiters nor the close.
    expect(outcomes).toEqual([undefined, undefined, undefined, undefined]);
    expect(closed).toBeUndefined();
    store.release();
    await closing;
    const [first, again, other, second] = await Promise.all(calls.map(settledOf));
    expect(first).toMatchObject({ ok: { runId: "order-1", newlySubmitted: true } });
    const jobId = (first as { ok: { jobId: string } }).ok.jobId;
    expect(again).toEqual({ ok: { runId: "order-1", jobId, newlySubmitted: false } });
    expect((other as { err: unknown }).err).toBeInstanceOf(InputMismatchError);
    expect(second).toMatchObject({ ok: { runId: "order-2", newlySubmitted: true } });
    expect(closed).toBe("closed");
    // After the close a submission is refused at once, not queued on the lock.
    await expect(env.runtime.submit({ runId: "order-3", input: enc("a") })).rejects.toBeInstanceOf(ClosedError);
  }, 30_000);
});

describe("a submission after the close", () => {
  it("is refused as closed for a run that exists as for a new one, not answered from memory", async () => {
    const env = await openEnv(
      runnerOf(async () => ({ kind: "succeed", result: enc("ok") })),
      { start: false },
    );
    expect(await env.runtime.submit({ runId: "order-1", input: enc("a") })).toMatchObject({ newlySubmitted: true });
    await env.queue.close();
    await expect(env.runtime.submit({ runId: "order-1", input: enc("a") })).rejects.toBeInstanceOf(ClosedError);
    await expect(env.runtime.submit({ runId: "order-1", input: enc("b") })).rejects.toBeInstanceOf(ClosedError);
    await expect(env.runtime.submit({ runId: "order-2", input: enc("a") })).rejects.toBeInstanceOf(ClosedError);
  });

  it("carries the queue's own closing error as its cause, also with several runtimes' queues closed in one process", async () => {
    for (let i = 0; i < 3; i++) {
      const env = await openEnv(
        runnerOf(async () => ({ kind: "succeed", result: enc("ok") })),
        { start: false },
      );
      await env.queue.close();
      const refused = await env.runtime.submit({ input: enc("a") }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ClosedError);
      // The queue's reason, not a copy: it says which queue closed and after what.
      expect((refused as ClosedError).cause).toBe(env.queue.closedSignal.reason);
      expect((refused as ClosedError).message).toMatch(/^the queue is closed after: queue ".*" is closed/);
    }
  });
});
