/**
 * @module Shared helpers of the queue tests: byte encoding, draining a queue, letting
 * background work run, and opening a queue on a MockClock.
 */
import { MockClock, MemoryStore, Queue, type ObjectStore, type OpenOptions } from "taquba";

export const enc = (s: string) => new TextEncoder().encode(s);
export const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Claims and acks every ready job of queue `name`, in claim order; their payloads as text. */
export async function drainPayloads(queue: Queue, name: string): Promise<string[]> {
  const out: string[] = [];
  for (let j = await queue.claim(name); j; j = await queue.claim(name)) {
    out.push(dec(j.payload));
    await queue.ack(j);
  }
  return out;
}

/** Lets queued microtasks and immediates run (background loops, notifications). */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Lets background work run and waits until everything committed so far is durable. */
export async function quiesce(queue: Queue): Promise<void> {
  await settle();
  await queue.flush();
  await settle();
}

export async function openQueue(opts: OpenOptions & { store?: ObjectStore; name?: string } = {}) {
  const { store: given, name, ...options } = opts;
  const clock = (options.clock as MockClock | undefined) ?? new MockClock(1_700_000_000_000);
  const store = given ?? new MemoryStore();
  // Only the queue's own options: it refuses a field it does not take.
  const queue = await Queue.open(store, name ?? "q", { flushIntervalMs: 0, ...options, clock });
  return { queue, clock, store };
}

/**
 * Whether every number job record `r` holds is in its field's range, as
 * stated here apart from the reader: a priority a whole number from 0 to
 * 2^32-1, counts and sizes whole from 0 up, the attempt limit whole from 1
 * up (each below 2^53), times from 0 to 2^53-1 (fractions kept). A record
 * holding another is damage (see job-record-ranges.test.ts).
 */
export function jobNumbersInRange(r: Record<string, unknown>): boolean {
  const whole = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER) => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
  const time = (v: unknown) => v === undefined || (typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER);
  const count = (v: unknown) => v === undefined || whole(v, 0);
  return (
    whole(r.priority, 0, 2 ** 32 - 1) &&
    whole(r.maxAttempts, 1) &&
    count(r.attempts) &&
    count(r.requeues) &&
    count(r.payloadSize) &&
    ["enqueuedAt", "claimedAt", "runAt", "wokenAt", "completedAt", "failedAt", "retainUntil"].every((f) => time(r[f]))
  );
}
