/**
 * @module A set of puts and deletes applied atomically by the engine.
 */

/** One operation of a `WriteBatch`. */
export type BatchOp = { kind: "put"; key: string; value: Uint8Array } | { kind: "delete"; key: string };

/**
 * Ops are kept in the order given; a later op on the same key wins. The
 * engine applies the whole batch or none of it, in memory and in the WAL.
 *
 * @example
 * const batch = new WriteBatch().put("k/1", new Uint8Array([1])).delete("k/0");
 * await engine.commit(batch);
 */
export class WriteBatch {
  /** The operations, in the order given. */
  readonly ops: BatchOp[] = [];

  /** Sets `key` to `value`. The engine keeps `value` as is (a copy when it is a subclass of `Uint8Array` other than `Buffer`): do not mutate it after committing. A view of a detached or shrunk buffer is refused at the commit. */
  put(key: string, value: Uint8Array): this {
    this.ops.push({ kind: "put", key, value });
    return this;
  }

  /** Removes `key` (absent: no effect). */
  delete(key: string): this {
    this.ops.push({ kind: "delete", key });
    return this;
  }

  /** Number of operations. */
  get size(): number {
    return this.ops.length;
  }

  /** True when the batch holds no operation. */
  get isEmpty(): boolean {
    return this.ops.length === 0;
  }
}
