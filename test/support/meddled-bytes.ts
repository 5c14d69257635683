/**
 * @module What a caller may do to an array after handing it to a call that
 * reads it later: change its bytes, or detach its buffer (by a transfer
 * through `structuredClone`, or `ArrayBuffer.prototype.transfer` where the
 * runtime has it). A test runs each against the bytes it handed over.
 */

/** Something done to a handed-over array, named for the test's title. */
export interface Meddling {
  readonly name: string;
  /** Whether this runtime can do it (a skipped test says so). */
  readonly available: boolean;
  apply(bytes: Uint8Array): void;
}

/** The value `change` fills the bytes with. */
export const CHANGED_BYTE = 0xee;

const transferable = typeof (ArrayBuffer.prototype as { transfer?: unknown }).transfer === "function";

export const change: Meddling = { name: "changed", available: true, apply: (b) => b.fill(CHANGED_BYTE) };

export const detachByClone: Meddling = {
  name: "detached by structuredClone",
  available: true,
  apply: (b) => {
    const buffer = b.buffer as ArrayBuffer;
    structuredClone(buffer, { transfer: [buffer] });
  },
};

export const detachByTransfer: Meddling = {
  name: "detached by transfer",
  available: transferable,
  apply: (b) => {
    (b.buffer as ArrayBuffer & { transfer(): ArrayBuffer }).transfer();
  },
};

/** Every meddling, the transfer one where this runtime has it. */
export const MEDDLINGS: readonly Meddling[] = [change, detachByClone, detachByTransfer];

/** Only the detaching ones: for bytes copied at the call but measured later. */
export const DETACHINGS: readonly Meddling[] = [detachByClone, detachByTransfer];
