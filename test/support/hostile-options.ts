/**
 * @module Option objects in the shapes that test a reader's one read of
 * each field: a getter that throws, a revoked Proxy, getters that answer
 * one value on their first read and another on every read after.
 */

/** `fields` as enumerable getters on a fresh object, each answering `first` on its first read and `later` on every read after; `reads` counts them. */
export function flipping(fields: Record<string, [first: unknown, later: unknown]>): { value: object; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const value = {};
  for (const [k, [first, later]] of Object.entries(fields)) {
    Object.defineProperty(value, k, {
      enumerable: true,
      get() {
        const n = (reads.get(k) ?? 0) + 1;
        reads.set(k, n);
        return n === 1 ? first : later;
      },
    });
  }
  return { value, reads };
}

/** `extra` with an enumerable `field` whose getter throws `no {field} today`. */
export function throwing(field: string, extra: object = {}): object {
  return Object.defineProperty({ ...extra }, field, {
    enumerable: true,
    get() {
      throw new Error(`no ${field} today`);
    },
  });
}

/** A Proxy revoked before it is handed over: every question asked of it throws a TypeError. */
export function revoked(): object {
  const p = Proxy.revocable({}, {});
  p.revoke();
  return p.proxy;
}

/** The most reads of any one field. */
export function mostReads(reads: Map<string, number>): number {
  return Math.max(0, ...reads.values());
}
