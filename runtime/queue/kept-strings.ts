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
 *
 * Most names asked for and not kept are new keys of other kinds than the
 * kept ones (a run's outcome, its terminal deletes), and their lengths
 * differ: each generation counts its names by length, and a name of a
 * length neither holds is answered without a look-up, which would hash the
 * name and flatten it first (most of a miss's cost).
 */

/** Name lengths counted; a longer name is always looked up. */
const COUNTED_LENGTHS = 512;

export class KeptStrings {
  readonly #generation: number;
  #young = new Map<string, string>();
  #old = new Map<string, string>();
  /** Names of each length below `COUNTED_LENGTHS` in `#young` and `#old`. */
  #youngLengths = new Uint32Array(COUNTED_LENGTHS);
  #oldLengths = new Uint32Array(COUNTED_LENGTHS);

  /** `generation`: entries per generation (at most twice that are held). */
  constructor(generation: number) {
    this.#generation = generation;
  }

  /** The string kept for `name`, or undefined. */
  get(name: string): string | undefined {
    // An untyped caller's value (null, a number) is looked up, as before, to miss.
    const n = typeof name === "string" ? name.length : COUNTED_LENGTHS;
    if (n < COUNTED_LENGTHS && this.#youngLengths[n] === 0 && this.#oldLengths[n] === 0) return undefined;
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
      // The dropped generation's counts, cleared, count the new one.
      const counts = this.#oldLengths.fill(0);
      this.#oldLengths = this.#youngLengths;
      this.#youngLengths = counts;
    }
    const before = this.#young.size;
    this.#young.set(name, value);
    const n = name.length;
    if (this.#young.size > before && n < COUNTED_LENGTHS) this.#youngLengths[n] = this.#youngLengths[n]! + 1;
    return value;
  }
}
