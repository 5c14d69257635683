/**
 * @module Small helpers shared by the acceptance tests: text bytes and a
 * bounded real-time wait for states reached by background work.
 */
import { until as untilRun } from "../support/until.js";

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array | null | undefined): string => (b == null ? String(b) : new TextDecoder().decode(b));

/** Waits (in real time, at most `timeoutMs` of this process being run: see test/support/until.ts) until `cond` holds. */
export function until(cond: () => boolean | Promise<boolean>, what = "condition", timeoutMs = 5000): Promise<void> {
  return untilRun(what, cond, timeoutMs);
}

/** Collects an async iterable into an array. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
