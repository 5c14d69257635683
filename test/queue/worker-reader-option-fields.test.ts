/**
 * @module `runWorker`'s options and `QueueReader.open`'s refuse a field
 * that is none of theirs, naming it, before anything is claimed: a
 * misspelt `concurency: 8` would otherwise run one job at a time in silence.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, QueueReader, runWorker } from "taquba";
import { refusal } from "../support/refusal.js";

const enc = (s: string) => new TextEncoder().encode(s);

describe("option fields of runWorker and QueueReader.open", () => {
  it("runWorker refuses a misspelt option and claims nothing", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q");
    try {
      await queue.enqueue("jobs", enc("a"));
      let processed = 0;
      const worker = { process: async () => void processed++ };
      const err = await refusal(() => runWorker(queue, "jobs", worker, { concurency: 8 } as never));
      expect(err.message).toMatch(/RunWorkerOptions\.concurency is not an option.*did you mean concurrency\?/);
      expect(processed).toBe(0);

      // Spelt right, the same call runs the job the refused one left pending.
      const ac = new AbortController();
      const done = runWorker(queue, "jobs", { process: async () => void (processed++, ac.abort()) }, { concurrency: 8, signal: ac.signal });
      await done;
      expect(processed).toBe(1);
    } finally {
      await queue.close();
    }
  });

  it("QueueReader.open refuses a misspelt option", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q");
    await queue.enqueue("jobs", enc("a"));
    await queue.close();
    const err = await refusal(() => QueueReader.open(store, "q", { clok: { now: () => 0 } } as never));
    expect(err.message).toMatch(/clok is not an option.*did you mean clock\?/);
    const reader = await QueueReader.open(store, "q", { clock: { now: () => Date.now() } });
    expect((await reader.stats("jobs")).pending).toBe(1);
  });
});
