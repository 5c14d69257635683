/**
 * @module The strings the last commit packed its small values into, by the
 * arrays and keys it was given, so that `Engine.committedToken` hands out
 * the string the state holds instead of packing the same bytes a second
 * time (a step's pointer: one latin1 copy and one string a step).
 *
 * Only the last commit's: each commit starts the list again, so an entry
 * is always what the commit that put the array made of it. At most
 * `MAX_PACKS` a commit (a step's commit packs three or four values); the
 * rest are packed again when asked, as before. It holds the last commit's
 * arrays of at most 1 KiB each (`MAX_PACKED_BYTES`) until the next commit.
 */
import type { BatchOp } from "./write-batch.js";

/** Packed values remembered per commit. */
const MAX_PACKS = 8;

export class CommittedPacks {
  readonly #values: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(MAX_PACKS).fill(undefined);
  readonly #keys: string[] = new Array<string>(MAX_PACKS).fill("");
  readonly #packs: string[] = new Array<string>(MAX_PACKS).fill("");
  #count = 0;

  /** Forgets the last commit's packs (a commit is about to apply). */
  clear(): void {
    this.#count = 0;
  }

  /** Notes that `op`, a put of the commit being applied, is held as `packed` (a string of its value's bytes). */
  note(op: BatchOp & { kind: "put" }, packed: string): void {
    const n = this.#count;
    if (n === MAX_PACKS) return;
    this.#values[n] = op.value;
    this.#keys[n] = op.key;
    this.#packs[n] = packed;
    this.#count = n + 1;
  }

  /**
   * The string the last commit packed `value` into as `key`'s value, or
   * undefined when it put no such array there (or it was not noted). The
   * array is taken to hold the bytes it was committed with, as
   * `committedToken`'s caller promises.
   */
  find(key: string, value: Uint8Array): string | undefined {
    const values = this.#values;
    for (let i = 0; i < this.#count; i++) if (values[i] === value && this.#keys[i] === key) return this.#packs[i];
    return undefined;
  }
}
