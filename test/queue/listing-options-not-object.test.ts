/**
 * @module The listings' options (`listJobs`, `deadJobs`, `kvScan`, on the
 * queue, its view and a reader) given as something that is not an object:
 * a number, text, an array, null, a function. Each is refused with a
 * ValidationError naming the option, before anything is read or written,
 * instead of listing with the defaults as if none were given.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, QueueReader, type QueueView, ValidationError, withCounting } from "taquba";
import { enc } from "./helpers.js";

const NOT_OBJECTS: [string, unknown][] = [
  ["a number", 5],
  ["text", "x"],
  ["an array", [1]],
  ["an empty array", []],
  ["null", null],
  ["a function", () => ({ limit: 1 })],
  ["true", true],
];

describe.each(NOT_OBJECTS)("listing options given as %s", (_what, bad) => {
  it("are refused by listJobs, deadJobs and kvScan of the queue, its view and a reader, naming the option and changing nothing", async () => {
    const store = withCounting(new MemoryStore());
    const queue = await Queue.open(store, "q", { flushIntervalMs: 0 });
    try {
      await queue.enqueue("w", enc("a"));
      await queue.kvPut("k/1", enc("v"));
      await queue.flush();
      const reader = await QueueReader.open(store, "q");
      const views: [string, QueueView][] = [
        ["view", queue.view()],
        ["reader", reader],
      ];
      store.reset();
      for (const [where, view] of views) {
        const calls: [string, RegExp, () => Promise<unknown>][] = [
          ["listJobs", /^ListJobsOptions must be an object, got /, () => view.listJobs("w", "pending", bad as never)],
          ["deadJobs", /^deadJobs' options must be an object, got /, () => view.deadJobs("w", bad as never)],
          ["kvScan", /^KvScanOptions must be an object, got /, () => view.kvScan("k/", bad as never)],
        ];
        for (const [name, message, call] of calls) {
          const err = await call().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(err, `${where}.${name}`).toBeInstanceOf(ValidationError);
          expect((err as Error).message, `${where}.${name}`).toMatch(message);
        }
      }
      await expect(queue.kvScan("k/", bad as never)).rejects.toThrow(/^KvScanOptions must be an object, got /);
      expect(store.counts.puts).toBe(0);
      // Unchanged, and the same calls with an object or none still list.
      expect((await queue.view().listJobs("w", "pending")).items).toHaveLength(1);
      expect((await queue.view().listJobs("w", "pending", {})).items).toHaveLength(1);
      expect(await queue.view().deadJobs("w", undefined)).toEqual([]);
      expect((await queue.kvScan("k/", { limit: 1 })).entries.map((e) => e.key)).toEqual(["k/1"]);
      expect((await queue.kvScan("k/", undefined)).entries.map((e) => e.key)).toEqual(["k/1"]);
    } finally {
      await queue.close();
    }
  });
});
