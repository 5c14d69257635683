/**
 * @module The forms the last commit kept its values in (a value kept in the
 * writer's arena, or one packed into a string), by the arrays and keys it
 * was given, so that `Engine.committedToken` hands out what the state holds
 * instead of looking the key up or packing the same bytes again (a step's
 * pointer: one per step).
 *
 * Only the last commit's: each commit starts the list again, so an entry
 * is always what the commit that put the array made of it. At most
 * `MAX_PACKS` a commit (a step's commit keeps three or four values); the
 * rest are looked up when asked, as before. It holds the last commit's
 * arrays of at most 1 KiB each (`MAX_PACKED_BYTES`), and the kept values
 * made of them, until the next commit.
 */
import type { KeptValue } from "./paged-value.js";
import type { BatchOp } from "./write-batch.js";

/** Kept values remembered per commit. */
const MAX_PACKS = 8;

/** How a commit kept a value it was given: the object the state holds for it, or a string of its bytes. */
export type CommittedForm = KeptValue | string;

export class CommittedPacks {
  readonly #values: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(MAX_PACKS).fill(undefined);
  readonly #keys: string[] = new Array<string>(MAX_PACKS).fill("");
  readonly #packs: (CommittedForm | undefined)[] = new Array<CommittedForm | undefined>(MAX_PACKS).fill(undefined);
  #count = 0;
  /**
   * The state's freezes when the last commit began: a freeze since moves a
   * kept value out of the memtable into a run, which holds its bytes, so
   * the object noted is no longer what the key holds (a string is: equal
   * strings are equal tokens).
   */
  #freezes = 0;

  /** Forgets the last commit's packs (a commit is about to apply, the state having frozen `freezes` times). */
  clear(freezes: number): void {
    // Let go of the arrays and kept values (each keeps its arena chunk alive) as the next commit replaces them.
    for (let i = 0; i < this.#count; i++) {
      this.#values[i] = undefined;
      this.#packs[i] = undefined;
    }
    this.#count = 0;
    this.#freezes = freezes;
  }

  /** Notes that `op`, a put of the commit being applied, is held as `kept`. */
  note(op: BatchOp & { kind: "put" }, kept: CommittedForm): void {
    const n = this.#count;
    if (n === MAX_PACKS) return;
    this.#values[n] = op.value;
    this.#keys[n] = op.key;
    this.#packs[n] = kept;
    this.#count = n + 1;
  }

  /**
   * What the last commit kept `value` as for `key`, or undefined when it put
   * no such array there (or it was not noted), or when the state froze
   * since (`freezes`: its count now) and the form is one a freeze replaces.
   * The array is taken to hold the bytes it was committed with, as
   * `committedToken`'s caller promises.
   */
  find(key: string, value: Uint8Array, freezes: number): CommittedForm | undefined {
    const values = this.#values;
    for (let i = 0; i < this.#count; i++) {
      if (values[i] !== value || this.#keys[i] !== key) continue;
      const kept = this.#packs[i]!;
      return typeof kept === "string" || freezes === this.#freezes ? kept : undefined;
    }
    return undefined;
  }
}
