/**
 * @module Shared helpers of the queue tests: byte encoding, draining a queue, letting
 * background work run, and opening a queue on a MockClock.
 */
import { MockClock, MemoryStore, Queue, type ObjectStore, type OpenOptions } from "taquba";

export const enc = (s: string) => new TextEncoder().encode(s);
export const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Runs `body` with `fields` set on `Object.prototype` by plain assignment (enumerable), then removes them. */
export async function whilePolluted(fields: Record<string, unknown>, body: () => Promise<void>): Promise<void> {
  const proto = Object.prototype as Record<string, unknown>;
  for (const [k, v] of Object.entries(fields)) proto[k] = v;
  try {
    await body();
  } finally {
    for (const k of Object.keys(fields)) delete proto[k];
  }
}

/** Runs `body` with `descriptors` defined on `Object.prototype` (accessors, read-only fields), then removes them. */
export async function whileDefined(descriptors: Record<string, PropertyDescriptor>, body: () => Promise<void>): Promise<void> {
  for (const [k, d] of Object.entries(descriptors)) Object.defineProperty(Object.prototype, k, { ...d, configurable: true });
  try {
    await body();
  } finally {
    for (const k of Object.keys(descriptors)) delete (Object.prototype as Record<string, unknown>)[k];
  }
}

/** Runs `body` with `names` of `Object.prototype` made read-only, as frozen intrinsics make them, then restores them. */
export async function whileReadOnly(names: string[], body: () => Promise<void>): Promise<void> {
  const was = names.map((n) => Object.getOwnPropertyDescriptor(Object.prototype, n)!);
  for (const [i, n] of names.entries()) Object.defineProperty(Object.prototype, n, { ...was[i], writable: false });
  try {
    await body();
  } finally {
    for (const [i, n] of names.entries()) Object.defineProperty(Object.prototype, n, was[i]!);
  }
}

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
