/**
 * @module `CountedWaits`: the promises a queue's close waits for, each
 * counted by how many waiters added it.
 *
 * Counted rather than a set: a chained settlement adds its own commit's
 * promise (no promise of its own made per step to wait on), and the engine
 * hands every commit of one WAL group the same promise, so several
 * settlements may add and remove one promise.
 */
export class CountedWaits implements Iterable<Promise<unknown>> {
  readonly #counts = new Map<Promise<unknown>, number>();

  /** How many distinct promises are waited for. */
  get size(): number {
    return this.#counts.size;
  }

  add(p: Promise<unknown>): void {
    this.#counts.set(p, (this.#counts.get(p) ?? 0) + 1);
  }

  /** Takes back one `add` of `p`; `p` stays until every waiter that added it took it back. */
  delete(p: Promise<unknown>): void {
    const n = this.#counts.get(p);
    if (n === undefined) return;
    if (n <= 1) this.#counts.delete(p);
    else this.#counts.set(p, n - 1);
  }

  [Symbol.iterator](): Iterator<Promise<unknown>> {
    return this.#counts.keys();
  }
}
