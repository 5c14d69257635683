/**
 * @module A client's cancel whose owner stopped halfway: cancelling a run
 * takes two commits, the run's cancel flag (with the request's applied mark)
 * and then the removal of its current step, and an owner can lose its store
 * in between (its lease ran out, a crash). The next owner finds the mark and
 * answers from it; it must also finish the cancel, or a run whose step
 * waits for a signal stays "cancelling" until that wait times out (an hour
 * here) and the client's `wait` does not return before.
 */
import { describe, expect, it } from "vitest";
import {
  FencedError,
  MemoryStore,
  StoreUnavailableError,
  MockClock,
  NoopTerminalHook,
  Queue,
  TaqubaClient,
  WorkflowRuntime,
  serveClients,
  type ObjectStore,
} from "taquba";
import { failWhen } from "../support/failing-store.js";
import { until } from "../support/until.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

async function openOwnerOn(store: ObjectStore, clock: MockClock) {
  const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const inbox = serveClients(queue, runtime, { store });
  return { queue, runtime, inbox };
}

describe("a cancel request replayed by the next owner", () => {
  it("is carried through: the run waiting for a signal ends cancelled, not an hour later", async () => {
    const inner = new MemoryStore();
    const clock = new MockClock();
    // Owner 1 writes through a store that refuses every write once one WAL object landed after
    // `armed`, as its lease guard does once the lease ran out: the cancel's first commit lands,
    // the second does not.
    let armed = false;
    let walPuts = 0;
    const fenced = failWhen(inner, (call, key) => {
      if (!armed || call === "get" || call === "list") return undefined;
      if (walPuts >= 1) return new FencedError(`the owner lease ran out before the write of "${key}"`);
      if (call === "put" && key.includes("/db/wal/")) walPuts++;
      return undefined;
    });
    const quiet = console.error;
    console.error = () => undefined;
    const first = await openOwnerOn(fenced, clock);
    const worker = first.runtime.spawn();
    const client = await TaqubaClient.open(inner, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 20_000 });
    let second: Awaited<ReturnType<typeof openOwnerOn>> | undefined;
    try {
      await first.runtime.submit({ runId: "r1", input: enc({ wait: "pay:r1" }) });
      await until("the run waits for its signal", async () => (await first.runtime.status("r1"))?.step === 1, 10_000);
      await worker.shutdown();

      armed = true;
      const cancelled = client.cancel("r1");
      await until("the cancel request is in the inbox", async () => {
        for await (const o of inner.list(`${STORE_NAME}/inbox/${STEP_QUEUE}/requests/`)) if (!o.key.endsWith("/~keep")) return true;
        return false;
      });
      // Owner 1 applies the first commit and fails on the second; the request stays.
      await expect(first.inbox.drain()).rejects.toBeInstanceOf(FencedError);
      expect(walPuts).toBe(1);
      expect((await client.status("r1"))?.state).toBe("cancelling");

      // The next owner answers from the applied mark, and finishes the cancel.
      second = await openOwnerOn(inner, clock);
      await second.inbox.drain();
      expect(second.inbox.stats.replayed).toBe(1);
      expect(await cancelled).toBe(true);
      expect(await second.runtime.status("r1")).toMatchObject({ state: "terminated", status: "cancelled" });
      expect((await client.wait("r1")).termination.status).toBe("cancelled");
      // Once, as the client was told: a second replay of the same cancel would change nothing.
      expect(await second.runtime.cancel("r1")).toBe(false);
    } finally {
      console.error = quiet;
      await client.close();
      await first.inbox.stop().catch(() => undefined);
      await first.queue.close().catch(() => undefined);
      if (second !== undefined) {
        await second.inbox.stop();
        await second.queue.close();
      }
    }
  });

  it("leaves a run re-opened since the cancel was applied alone", async () => {
    const inner = new MemoryStore();
    const clock = new MockClock();
    // The owner applies the cancel in full, then fails to write the answer: the request stays.
    let failAnswers = 0;
    const store = failWhen(inner, (call, key) => {
      if (call === "put" && key.includes("/answers/") && !key.endsWith("/~keep") && failAnswers > 0) {
        failAnswers--;
        return new StoreUnavailableError("put", key, new Error("connection reset"));
      }
      return undefined;
    });
    const quiet = console.error;
    console.error = () => undefined;
    const owner = await openOwnerOn(store, clock);
    const worker = owner.runtime.spawn();
    const client = await TaqubaClient.open(inner, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 20_000 });
    try {
      await owner.runtime.submit({ runId: "r2", input: enc({ wait: "pay:r2" }) });
      await until("the run waits for its signal", async () => (await owner.runtime.status("r2"))?.step === 1, 10_000);
      failAnswers = 1;
      const cancelled = client.cancel("r2");
      await until("the cancel is applied", async () => {
        await owner.inbox.drain().catch(() => undefined);
        return (await owner.runtime.status("r2"))?.state === "terminated";
      });
      expect(failAnswers).toBe(0);
      // Re-opened before the request is read again: the replay answers, and cancels nothing.
      await owner.runtime.retryRun("r2", { fromStep: 0 });
      await owner.inbox.drain();
      expect(owner.inbox.stats.replayed).toBe(1);
      expect(await cancelled).toBe(true);
      expect(await owner.runtime.status("r2"), JSON.stringify(await owner.runtime.outcome("r2"))).not.toMatchObject({
        state: expect.stringMatching(/cancelling|terminated/),
      });
      // The inbox lists on the owner's mock clock: read it by hand until the answer is in.
      let answer: string | undefined;
      const signalled = client.signal("pay:r2", enc("paid")).then((a) => (answer = a));
      await until("the signal is answered", async () => {
        await owner.inbox.drain();
        return answer !== undefined;
      });
      expect(["delivered", "buffered"]).toContain(await signalled);
      expect((await client.wait("r2")).termination.status).toBe("succeeded");
    } finally {
      console.error = quiet;
      await client.close();
      await owner.inbox.stop();
      await worker.shutdown();
      await owner.queue.close();
    }
  });
});
