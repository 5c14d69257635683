/**
 * @module Caller KV values lent for one decode. `Queue.kvGet` copies what
 * it returns, because its caller may keep or change the bytes and they are
 * the engine's own; for a value over 64 bytes V8 puts that copy outside the
 * heap, at about 30 times the cost of a small one. The runtime's own reads
 * of a run's records (its outcome, its waits) decode the bytes at once and
 * keep only the decoded record: they borrow the engine's bytes instead.
 *
 * `BorrowedBytes` is not a `Uint8Array` to the type checker, so it cannot
 * be kept as a record's bytes, compared, written or handed on by mistake:
 * `decodeBorrowed` is its only use. It hands the decoder a `Buffer` over the
 * borrowed memory, so whatever a decoder cuts out of it (a MessagePack
 * binary field) comes out a `Buffer` too, which the workflow's codec copies
 * into an array of its own: the decoded record shares no memory with the
 * engine. The engine never writes a value's bytes again once committed
 * (a later write, checkpoint, compaction or reopen holds new bytes and
 * leaves these as they are), so a view kept past a write still decodes the
 * value it was read as, never another.
 */

declare const borrowed: unique symbol;

/** A committed value's bytes lent by `Queue.kvBorrowNow`: decode them (`decodeBorrowed`), never keep them. */
export interface BorrowedBytes {
  readonly [borrowed]: true;
}

/** `bytes`, the engine's own, lent for a decode. */
export function lend(bytes: Uint8Array): BorrowedBytes {
  return bytes as unknown as BorrowedBytes;
}

/**
 * What `decode` makes of the borrowed bytes of caller key `key` (passed on,
 * for its errors). `decode` must not keep its argument, nor return a view of
 * it other than as a `Buffer` it copies (see the module's note).
 */
export function decodeBorrowed<T>(view: BorrowedBytes, key: string, decode: (bytes: Uint8Array, key: string) => T): T {
  const v = view as unknown as Uint8Array;
  return decode(Buffer.from(v.buffer, v.byteOffset, v.byteLength), key);
}
