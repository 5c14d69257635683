/**
 * @module A set of puts and deletes applied atomically by the engine.
 */

export type BatchOp = { kind: "put"; key: string; value: Uint8Array } | { kind: "delete"; key: string };

/**
 * Ops are kept in the order given; a later op on the same key wins. The
 * engine applies the whole batch or none of it, in memory and in the WAL.
 */
export class WriteBatch {
  readonly ops: BatchOp[] = [];

  put(key: string, value: Uint8Array): this {
    this.ops.push({ kind: "put", key, value });
    return this;
  }

  delete(key: string): this {
    this.ops.push({ kind: "delete", key });
    return this;
  }

  get size(): number {
    return this.ops.length;
  }

  get isEmpty(): boolean {
    return this.ops.length === 0;
  }
}
