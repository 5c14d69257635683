/**
 * @module A set of puts and deletes applied atomically by the engine.
 */

import type { HeadedKey } from "./key-family.js";

/**
 * One operation of a `WriteBatch`. `hint` (internal): the key as its family
 * made it, so the memtable places it without a search (key-family.ts); only
 * an owned batch's ops keep it (`commitOwned`), `commit` reads ops without.
 */
export type BatchOp =
  | {
      kind: "put";
      key: string;
      value: Uint8Array;
      /** @internal */
      hint?: HeadedKey;
    }
  | {
      kind: "delete";
      key: string;
      /** @internal */
      hint?: HeadedKey;
    };

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

  /** @internal `put` of a key its family made (key-family.ts), which the memtable places without a search. */
  putHeaded(key: HeadedKey, value: Uint8Array): this {
    this.ops.push({ kind: "put", key: key.key, value, hint: key });
    return this;
  }

  /** @internal `delete` of a key its family made (see `putHeaded`). */
  deleteHeaded(key: HeadedKey): this {
    this.ops.push({ kind: "delete", key: key.key, hint: key });
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
