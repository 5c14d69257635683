/**
 * @module The chained acks of one WAL group, ended by the one reaction the
 * group's commit promise gets (`SubmittedAck.whenDurable`) rather than an
 * await per step: a failed WAL put fails every step of the group with the
 * put's error, each step ends (its slot freed, the worker told), and no
 * next step is handed out; a close while the group is in flight waits for
 * it and gets every claimed next step back, uncounted.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, type ObjectStore, Queue, StepOutcome, StoreRequestError, WorkflowRuntime } from "taquba";
import { dec, enc, holdableStore, openEnv, runnerOf, until } from "./helpers.js";

const RUNS = 3;

/** Step 0 continues at once (after `gate`, when given), step 1 succeeds; each call noted as `<run>:<step>`. */
function twoSteps(calls: string[], gate?: Promise<void>) {
  return runnerOf(async (s) => {
    calls.push(`${dec(s.payload).split(":")[0]}:${s.stepNumber}`);
    if (s.stepNumber === 0) {
      if (gate !== undefined) await gate;
      return StepOutcome.continueNow(enc(`${dec(s.payload)}:0`));
    }
    return StepOutcome.succeed(enc(`${dec(s.payload)}:1`));
  });
}

/** A gate every step 0 waits at, opened by the test once all of them wait: their acks are then submitted in one turn. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}

describe("the chained acks of one WAL group", () => {
  it("a WAL put that fails under a group of chained steps fails each of them with its error, ends each, and hands out no next step", async () => {
    const inner = new MemoryStore();
    const error = new StoreRequestError("put", "wal", "the credentials were revoked");
    // WAL puts held once armed, then refused for good: the held group's commit and every one after reject.
    let holding = false;
    let refused = false;
    const held: Array<() => void> = [];
    const store: ObjectStore = {
      get: (k) => inner.get(k),
      delete: (k) => inner.delete(k),
      list: (p, o) => inner.list(p, o),
      async put(k, b, o) {
        if (k.includes("/wal/") && holding && !refused) await new Promise<void>((r) => held.push(r));
        if (k.includes("/wal/") && refused) throw error;
        return inner.put(k, b, o);
      },
    };
    const calls: string[] = [];
    const g = gate();
    const env = await openEnv(twoSteps(calls, g.opened), {
      store,
      queueOptions: { logger: { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined } },
    });
    for (let i = 0; i < RUNS; i++) await env.runtime.submit({ runId: `r${i}`, input: enc(`r${i}`) });
    await until(() => calls.length === RUNS, "every step 0 ran");
    holding = true;
    g.open();
    await until(() => held.length > 0, "the acks' WAL put held");
    // Each step 0's ack claimed its run's step 1 in the same commit.
    expect((await env.queue.view().listJobs("workflow-steps", "claimed")).items).toHaveLength(RUNS);
    refused = true;
    for (const release of held.splice(0)) release();
    await until(() => env.queue.closed, "the engine failed");
    // Resolves once every step it started has ended.
    await env.worker!.shutdown();
    // No step 1 ran: none was handed out, its ack never durable.
    expect([...calls].sort()).toEqual(["r0:0", "r1:0", "r2:0"]);
    const failures = env.logged as Array<{ err: unknown; jobId: string }>;
    expect(failures).toHaveLength(RUNS);
    expect(new Set(failures.map((f) => f.jobId)).size).toBe(RUNS);
    // Each step failed with the one error its group's commit rejected with, as an await of it gave.
    for (const f of failures) expect(f.err).toBe(failures[0]!.err);
    expect(String((failures[0]!.err as Error).message)).toContain("the credentials were revoked");
    await env.queue.close().catch(() => undefined);
    // A reopen runs every step 0 again (its ack never became durable) and finishes the runs.
    const queue = await Queue.open(inner, "wf", { flushIntervalMs: 1 });
    const runtime = WorkflowRuntime.builder(queue, inner, twoSteps(calls), NoopTerminalHook)
      .logger({ error: () => undefined })
      .build();
    const worker = runtime.spawn();
    for (let i = 0; i < RUNS; i++) {
      await runtime.wait(`r${i}`);
      expect(dec((await runtime.outcome(`r${i}`))!.result)).toBe(`r${i}:0:1`);
    }
    await worker.shutdown();
    await queue.close();
  });

  it("a close while the chained acks' group is in flight waits for it, gives every claimed next step back uncounted, and ends each step", async () => {
    const store = holdableStore();
    const calls: string[] = [];
    const g = gate();
    const env = await openEnv(twoSteps(calls, g.opened), { store });
    let ended = false;
    void env.worker!.done.then(() => (ended = true));
    for (let i = 0; i < RUNS; i++) await env.runtime.submit({ runId: `r${i}`, input: enc(`r${i}`) });
    await until(() => calls.length === RUNS, "every step 0 ran");
    store.hold();
    g.open();
    await until(() => store.held > 0, "the acks' WAL put held");
    const claimed = (await env.queue.view().listJobs("workflow-steps", "claimed")).items;
    expect(claimed).toHaveLength(RUNS);
    const closing = env.queue.close();
    store.release();
    await closing;
    await until(() => ended, "the worker ended with the queue");
    expect([...calls].sort()).toEqual(["r0:0", "r1:0", "r2:0"]);
    expect(env.logged).toEqual([]);
    // Each step 1 went back to pending with its attempt uncounted: the close waited for the hand-outs.
    const queue = await Queue.open(store.inner, "wf", { flushIntervalMs: 1 });
    for (const j of claimed) expect(await queue.view().job(j.id)).toMatchObject({ state: "pending", attempt: 0 });
    const runtime = WorkflowRuntime.builder(queue, store.inner, twoSteps(calls), NoopTerminalHook)
      .logger({ error: () => undefined })
      .build();
    const worker = runtime.spawn();
    for (let i = 0; i < RUNS; i++) {
      await runtime.wait(`r${i}`);
      expect(dec((await runtime.outcome(`r${i}`))!.result)).toBe(`r${i}:0:1`);
    }
    expect([...calls].sort()).toEqual(["r0:0", "r0:1", "r1:0", "r1:1", "r2:0", "r2:1"]);
    await worker.shutdown();
    await queue.close();
  });
});
