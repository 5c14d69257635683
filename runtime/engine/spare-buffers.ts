/**
 * @module Buffers of objects already stored, kept for the next objects to
 * write into (see store/put-body.ts for when a buffer may be written over):
 * at most `max` are kept, and a taker gets one with room enough or none.
 */

/**
 * A bounded set of spare buffers of type `T`, each with a capacity in bytes:
 * at most `max` of them, and at most `maxBytes` of capacity together.
 */
export class SpareBuffers<T> {
  readonly #items: T[] = [];
  readonly #max: number;
  readonly #maxBytes: number;
  readonly #capacity: (item: T) => number;
  #bytes = 0;

  constructor(max: number, capacity: (item: T) => number, maxBytes = Number.POSITIVE_INFINITY) {
    this.#max = max;
    this.#capacity = capacity;
    this.#maxBytes = maxBytes;
  }

  /** Spares kept now. */
  get size(): number {
    return this.#items.length;
  }

  /** A spare with room for at least `bytes` (the one given back last first), or undefined. */
  take(bytes: number): T | undefined {
    const items = this.#items;
    for (let i = items.length - 1; i >= 0; i--) {
      const cap = this.#capacity(items[i]!);
      if (cap >= bytes) {
        this.#bytes -= cap;
        return items.splice(i, 1)[0];
      }
    }
    return undefined;
  }

  /** Drops every spare kept, for the collector to take once nothing else holds them. */
  clear(): void {
    this.#items.length = 0;
    this.#bytes = 0;
  }

  /** Keeps `item` unless `max` are kept already or it would pass `maxBytes`. */
  give(item: T): void {
    const cap = this.#capacity(item);
    if (this.#items.length >= this.#max || this.#bytes + cap > this.#maxBytes) return;
    this.#items.push(item);
    this.#bytes += cap;
  }
}
