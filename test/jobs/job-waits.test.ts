/**
 * Waiting on job handles: woken by the runtime's in-process termination
 * announcements (a mock clock that never moves proves no poll was needed),
 * and one shared fallback poll per runner whose cost per interval is bounded
 * whatever the number of waits.
 */

import { describe, expect, it } from "vitest";
import { JobRunner, MemoryStore, MockClock, Queue } from "taquba";
import { FALLBACK_BATCH, JobWaits } from "../../runtime/jobs/job-waits.js";
import { RunEvents } from "../../runtime/workflow/runs/run-events.js";
import { settle } from "../workflow/helpers.js";
import { addJob } from "./fixtures.js";

describe("job waits", () => {
  it("hundreds of concurrent handles resolve on termination announcements alone, with no fallback read", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "waits", { clock, flushIntervalMs: 1 });
    const runner = JobRunner.builder(queue, store)
      .register(addJob, { run: async (i) => i.a + i.b })
      .build();
    const worker = runner.spawn();
    try {
      const n = 300;
      const handles = await Promise.all(Array.from({ length: n }, (_, i) => runner.submit(addJob, { a: i, b: 1 })));
      // The clock never moves: a wait that needed the poll would never resolve.
      const outputs = await Promise.all(handles.map((h) => h.output()));
      expect(outputs).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      expect(runner.waits.fallbackReads).toBe(0);
      expect(runner.waits.size).toBe(0);
    } finally {
      await worker.shutdown();
      await queue.close();
    }
  });

  it("the fallback poll re-reads at most one batch per interval, oldest first, and stops when nobody waits", async () => {
    const clock = new MockClock(0);
    const events = new RunEvents();
    const endedElsewhere = new Set<string>();
    const reads: string[] = [];
    const waits = new JobWaits(events, clock, 100, async (runId) => {
      reads.push(runId);
      return !endedElsewhere.has(runId);
    });
    const n = 200;
    const woken = new Set<string>();
    const registered = Array.from({ length: n }, (_, i) => {
      const runId = `r-${i}`;
      const w = waits.register(runId);
      void w.promise.then(() => woken.add(runId));
      return { runId, w };
    });
    // A second wait on one run shares its registration.
    const twin = waits.register("r-7");
    expect(waits.size).toBe(n);

    // An announcement wakes its run's waits with no read at all.
    events.terminated("r-7");
    await settle(5);
    expect(woken.has("r-7")).toBe(true);
    await expect(twin.promise).resolves.toBeUndefined();
    expect(reads).toEqual([]);
    expect(waits.size).toBe(n - 1);

    // A termination no announcement reached (r-150) is found by the shared poll, one bounded batch per interval.
    endedElsewhere.add("r-150");
    clock.advance(100);
    await settle(5);
    expect(reads.length).toBe(FALLBACK_BATCH);
    expect(reads[0]).toBe("r-0");
    expect(woken.has("r-150")).toBe(false);
    clock.advance(100);
    await settle(5);
    expect(reads.length).toBe(2 * FALLBACK_BATCH);
    expect(woken.has("r-150")).toBe(false);
    clock.advance(100);
    await settle(5);
    expect(reads.length).toBe(3 * FALLBACK_BATCH);
    expect(woken.has("r-150")).toBe(true);
    expect(woken.size).toBe(2);
    // Checked runs moved to the back: the fourth batch starts where the third ended.
    clock.advance(100);
    await settle(5);
    expect(reads[3 * FALLBACK_BATCH]).toBe(`r-${3 * FALLBACK_BATCH + 1}`);

    // Once every wait is dropped the poll stops: time passing reads nothing.
    for (const { w } of registered) w.dispose();
    twin.dispose();
    expect(waits.size).toBe(0);
    const before = reads.length;
    clock.advance(1_000);
    await settle(5);
    expect(reads.length).toBe(before);
  });
});
