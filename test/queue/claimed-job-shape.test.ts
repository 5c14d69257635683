/**
 * @module A claimed job is a plain frozen object: prototype
 * `Object.prototype`, its keys in their order (the optional ones where
 * they belong), data fields read-only, `cancelSignal` an enumerable
 * accessor, no symbol key (its claim is in a private slot), printed
 * as a plain object. How the queue builds it (fields assigned in a
 * constructor) must show in none of these.
 */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { type ClaimedJob, MemoryStore, Queue } from "taquba";

const KEYS = ["id", "queueName", "payload", "headers", "attempt", "maxAttempts", "priority", "enqueuedAt", "claimedAt", "lease", "cancelSignal"];

function expectPlainJob(job: ClaimedJob, optional: string[]): void {
  const keys = [...KEYS, ...optional, "isLastAttempt"];
  expect(Object.getPrototypeOf(job)).toBe(Object.prototype);
  expect(job.constructor).toBe(Object);
  expect(Object.keys(job)).toEqual(keys);
  expect(Object.isFrozen(job)).toBe(true);
  for (const k of keys) {
    const d = Object.getOwnPropertyDescriptor(job, k)!;
    if (k === "cancelSignal") expect(d).toMatchObject({ enumerable: true, configurable: false });
    else expect(d, k).toMatchObject({ writable: false, enumerable: true, configurable: false });
  }
  expect(Object.getOwnPropertySymbols(job)).toHaveLength(0);
  expect(Object.getOwnPropertySymbols({ ...job })).toHaveLength(0);
  expect(inspect(job, { depth: 0 }).startsWith("{")).toBe(true);
}

describe("a claimed job", () => {
  it("is a plain frozen object, with and without its optional fields, and still settles", async () => {
    const q = await Queue.open(new MemoryStore(), "q", { defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    try {
      await q.enqueue("jobs", new Uint8Array([1]), { headers: { tenant: "a" } });
      const first = (await q.claim("jobs"))!;
      expectPlainJob(first, []);
      expect(first.isLastAttempt()).toBe(false);
      await q.nack(first, "try again");
      const again = (await q.claim("jobs"))!;
      expectPlainJob(again, ["lastError"]);
      expect(again.lastError).toBe("try again");
      expect(again.attempt).toBe(2);
      await q.ack(again);
      expect(await q.claim("jobs")).toBeNull();
    } finally {
      await q.close();
    }
  });

  it("has its fields as its own with Object.prototype polluted by their names while it is claimed", async () => {
    const q = await Queue.open(new MemoryStore(), "q");
    const proto = Object.prototype as Record<string, unknown>;
    // Not the optional fields: a record read under the pollution inherits them (the record, not the job, would carry them).
    const names = [...KEYS.filter((k) => k !== "cancelSignal"), "isLastAttempt"];
    try {
      await q.enqueue("jobs", new Uint8Array([7]), { headers: { tenant: "a" } });
      let job: ClaimedJob | null;
      for (const k of names) proto[k] = "polluted";
      try {
        job = await q.claim("jobs");
      } finally {
        for (const k of names) delete proto[k];
      }
      expectPlainJob(job!, []);
      expect(job!.payload).toEqual(new Uint8Array([7]));
      expect(job!.headers).toEqual({ tenant: "a" });
      expect(job!.isLastAttempt()).toBe(false);
      await q.ack(job!);
      expect(await q.claim("jobs")).toBeNull();
    } finally {
      await q.close();
    }
  });
});
