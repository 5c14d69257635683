/**
 * @module The queue's clock reaches its engine: the pause of automatic
 * checkpoints after a failed one (1 s, doubling) runs on `OpenOptions.clock`
 * unless `engineOptions.clock` names another, so a MockClock ends it.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, type OpenOptions } from "taquba";
import { InjectedFaultError } from "taquba/testing";
import { failWhen } from "../support/failing-store.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** Lets `n` turns of the event loop run. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

/** A queue "q" whose segment puts fail while `failing()`, checkpointing every two WAL objects; counts the segment puts tried. */
async function openFailing(clock: MockClock, failing: () => boolean, engineOptions: OpenOptions["engineOptions"] = {}) {
  const tried = { segmentPuts: 0 };
  const failures: unknown[] = [];
  const store = failWhen(new MemoryStore(), (call, key) => {
    if (call !== "put" || !key.startsWith("q/db/seg/")) return undefined;
    tried.segmentPuts++;
    return failing() ? new InjectedFaultError("put", key, false) : undefined;
  });
  const queue = await Queue.open(store, "q", {
    clock,
    flushIntervalMs: 0,
    recordCacheBytes: null,
    engineOptions: {
      checkpointWalObjects: 2,
      checkpointWalBytes: 0,
      checkpointBacklog: 0,
      retry: { attempts: 1 },
      onBackgroundError: (err) => failures.push(err),
      ...engineOptions,
    },
  });
  return { queue, tried, failures };
}

describe("the queue's clock times its engine's checkpoint pause", () => {
  it("after a failed checkpoint, no attempt until the queue's MockClock passed the pause; then one", async () => {
    let failing = true;
    const clock = new MockClock(1_700_000_000_000);
    const { queue, tried, failures } = await openFailing(clock, () => failing);
    for (let i = 0; failures.length === 0 && i < 50; i++) await queue.enqueue("jobs", enc(`a${i}`));
    for (let i = 0; failures.length === 0 && i < 5000; i++) await turns(1);
    expect(failures.length).toBe(1);
    failing = false;
    const triedAfterFailure = tried.segmentPuts;

    // Paused for 1 s of the queue's clock, however much real time passes.
    clock.advance(999);
    for (let i = 0; i < 4; i++) await queue.enqueue("jobs", enc(`b${i}`));
    await turns(50);
    expect(tried.segmentPuts, "paused: no checkpoint attempted").toBe(triedAfterFailure);

    // The pause ends on the queue's clock: the next WAL object starts an attempt, which now succeeds.
    clock.advance(1);
    await queue.enqueue("jobs", enc("c"));
    for (let i = 0; i < 5000 && queue.engineStats.checkpoints === 0; i++) await turns(1);
    expect(queue.engineStats.checkpoints).toBeGreaterThanOrEqual(1);
    expect(failures.length).toBe(1);
    await queue.close();
  });

  it("engineOptions.clock, when given, is the engine's instead", async () => {
    let failing = true;
    const queueClock = new MockClock(1_700_000_000_000);
    const engineClock = new MockClock(1_700_000_000_000);
    const { queue, failures } = await openFailing(queueClock, () => failing, { clock: engineClock });
    for (let i = 0; failures.length === 0 && i < 50; i++) await queue.enqueue("jobs", enc(`a${i}`));
    for (let i = 0; failures.length === 0 && i < 5000; i++) await turns(1);
    expect(failures.length).toBe(1);
    failing = false;
    // The queue's clock moving does not end the engine's pause.
    queueClock.advance(60_000);
    for (let i = 0; i < 4; i++) await queue.enqueue("jobs", enc(`b${i}`));
    await turns(50);
    expect(queue.engineStats.checkpoints).toBe(0);
    engineClock.advance(1000);
    await queue.enqueue("jobs", enc("c"));
    for (let i = 0; i < 5000 && queue.engineStats.checkpoints === 0; i++) await turns(1);
    expect(queue.engineStats.checkpoints).toBeGreaterThanOrEqual(1);
    await queue.close();
  });
});
