/**
 * @module Small helpers shared by the acceptance tests: text bytes and a
 * bounded real-time wait for states reached by background work.
 */

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array | null | undefined): string => (b == null ? String(b) : new TextDecoder().decode(b));

/** Waits (in real time, at most `timeoutMs`) until `cond` holds. */
export async function until(cond: () => boolean | Promise<boolean>, what = "condition", timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 2));
  }
}

/** Collects an async iterable into an array. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
