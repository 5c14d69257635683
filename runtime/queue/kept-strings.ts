/**
 * @module Engine key strings kept across uses, in bounded memory.
 *
 * A key built afresh for each use is a new concatenation that the engine's
 * memtable flattens on its first comparison: a copy per use. Keys used on
 * every step (a queue's stats key, a run's records) are kept and handed
 * out as one string instead.
 *
 * Two generations bound the memory: a key found in the older one moves to
 * the newer, and when the newer fills up the older is dropped, so keys in
 * use stay while the others leave.
 */
export class KeptStrings {
  readonly #generation: number;
  #young = new Map<string, string>();
  #old = new Map<string, string>();

  /** `generation`: entries per generation (at most twice that are held). */
  constructor(generation: number) {
    this.#generation = generation;
  }

  /** The string kept for `name`, or undefined. */
  get(name: string): string | undefined {
    const kept = this.#young.get(name);
    if (kept !== undefined) return kept;
    const k = this.#old.get(name);
    if (k !== undefined) this.keep(name, k);
    return k;
  }

  /** Keeps `value` for `name` and returns it. */
  keep(name: string, value: string): string {
    if (this.#young.size >= this.#generation) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(name, value);
    return value;
  }
}
