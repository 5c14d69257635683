/**
 * @module Buffers of objects already stored, kept for the next objects to
 * write into (see store/put-body.ts for when a buffer may be written over):
 * at most `max` are kept, and a taker gets one with room enough or none.
 */

/** A bounded set of spare buffers of type `T`, each with a capacity in bytes. */
export class SpareBuffers<T> {
  readonly #items: T[] = [];
  readonly #max: number;
  readonly #capacity: (item: T) => number;

  constructor(max: number, capacity: (item: T) => number) {
    this.#max = max;
    this.#capacity = capacity;
  }

  /** A spare with room for at least `bytes` (the one given back last first), or undefined. */
  take(bytes: number): T | undefined {
    const items = this.#items;
    for (let i = items.length - 1; i >= 0; i--) {
      if (this.#capacity(items[i]!) >= bytes) return items.splice(i, 1)[0];
    }
    return undefined;
  }

  /** Keeps `item` unless `max` are kept already. */
  give(item: T): void {
    if (this.#items.length < this.#max) this.#items.push(item);
  }
}
