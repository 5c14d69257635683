/**
 * @module The heads of the memtable's ordered map: which tree of the map
 * holds a key. Every key's first code unit below 128 has a head (the empty
 * key shares unit 0's, before its keys), and one more head holds every
 * other key. A caller of the engine may declare key prefixes it uses
 * heavily (`EngineOptions.keyHeads`): the keys starting with each then get
 * a head of their own, cut out of their first unit's head, so a search for
 * one of a small family's keys descends the family's tree instead of one
 * of every key with that first unit. The engine knows nothing of what the
 * prefixes mean.
 *
 * A caller may also declare prefixes while the engine runs
 * (`Engine.declareKeyHeads`, checked as the option is): they join the
 * option's set, at most `MAX_KEY_HEADS` in all, and the memtable is built
 * again with the merged heads at once (`Memtable.withHeads`).
 *
 * A declared prefix `p` adds two bounds to its first unit's head: `p`
 * itself and the least string after every string starting with `p` (its
 * last unit one higher). Within a first unit with bounds, the heads are
 * the ranges between them, in key order; a key finds its head by a binary
 * search over that unit's bounds, and every other key by its first unit as
 * before (one table read). Prefixes are ASCII, so the built-in comparison
 * of a key with a bound is the engine's key order too (`compareKeys`, and
 * both orders the map takes), and the heads ascend with the keys. Heads
 * live in memory only: nothing stored depends on them.
 */

import { ValidationError } from "../errors.js";
import { describeValue, errorText, isOptionArray } from "../option-values.js";
import { flatHead, flatString } from "./flat-string.js";

/** Most prefixes a caller may declare: each adds two bounds to its first unit's search. */
export const MAX_KEY_HEADS = 32;
/** Longest prefix a caller may declare, in code units. */
export const MAX_KEY_HEAD_LENGTH = 256;

/** First units with a table slot of their own; every other key's is slot `ASCII_UNITS`. */
const ASCII_UNITS = 128;

/**
 * The least string after every string starting with `p`: `p` with its last
 * unit one higher (an ASCII unit: below U+FFFF). Flat, as every bound is
 * (flat-string.ts): a bound made by `+` sent each comparison with it to the
 * engine's runtime.
 */
function pastPrefix(p: string): string {
  return flatHead(p, p.length, 1);
}

/** The heads of an ordered map: see the module documentation. Immutable; maps, their clones and cursors share one. */
export class KeyHeads {
  /** No prefix declared: the 129 heads by first unit. */
  static readonly NONE = new KeyHeads([]);

  /** Per first unit below 128 and one slot for every other key: its head, or `-(g + 1)` when group `g`'s bounds split that unit's keys. */
  readonly #first = new Int32Array(ASCII_UNITS + 1);
  /** Per group, its bounds in ascending order: a key's head is the group's first head plus the bounds at or before it. */
  readonly #bounds: string[][] = [];
  /** Per group, its first head. */
  readonly #base: number[] = [];
  /** How many heads there are. */
  readonly count: number;
  /** The declared prefixes, ascending (the same heads whatever order they were declared in). */
  readonly prefixes: readonly string[];

  /** Heads for `prefixes` (checked by the engine's options: ASCII, not empty, no duplicates). */
  private constructor(prefixes: readonly string[]) {
    this.prefixes = Object.freeze([...prefixes].sort());
    // A bound is a string of two units or more: a one-unit bound starts its unit's head (every key of the unit is at or after it) or the next unit's.
    const byUnit = new Map<number, Set<string>>();
    for (const p of this.prefixes) {
      for (const bound of [flatString(p), pastPrefix(p)]) {
        const unit = bound.charCodeAt(0);
        if (bound.length < 2 || unit !== p.charCodeAt(0)) continue;
        let set = byUnit.get(unit);
        if (set === undefined) byUnit.set(unit, (set = new Set()));
        set.add(bound);
      }
    }
    let head = 0;
    for (let unit = 0; unit <= ASCII_UNITS; unit++) {
      const bounds = byUnit.get(unit);
      if (bounds === undefined) {
        this.#first[unit] = head++;
        continue;
      }
      this.#first[unit] = -(this.#bounds.length + 1);
      this.#bounds.push([...bounds].sort());
      this.#base.push(head);
      head += bounds.size + 1;
    }
    this.count = head;
  }

  /** The heads for `prefixes`; `NONE` when there are none. */
  static of(prefixes: readonly string[]): KeyHeads {
    return prefixes.length === 0 ? KeyHeads.NONE : new KeyHeads(prefixes);
  }

  /**
   * The prefixes of this set and `added` (checked: see `keyHeadsProblems`),
   * ascending, without repeats: `this` itself when `added` brings none new.
   */
  union(added: readonly string[]): readonly string[] {
    const have = new Set(this.prefixes);
    const fresh = added.filter((p) => !have.has(p));
    return fresh.length === 0 ? this.prefixes : [...this.prefixes, ...fresh].sort();
  }

  /** The head of `key`'s tree: a table read by its first unit, then a search of that unit's bounds when it has any. */
  headOf(key: string): number {
    const u = key.charCodeAt(0);
    const h = this.#first[u < ASCII_UNITS ? u : key.length === 0 ? 0 : ASCII_UNITS]!;
    if (h >= 0) return h;
    const g = -h - 1;
    const bounds = this.#bounds[g]!;
    let lo = 0;
    let hi = bounds.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (bounds[mid]! <= key) lo = mid + 1;
      else hi = mid;
    }
    return this.#base[g]! + lo;
  }

  /**
   * The head every key starting with `prefix` has, or -1 when these heads
   * split them (a bound longer than `prefix` starts with it) or `prefix` is
   * empty. A bound at or before `prefix` is at or before each such key; any
   * other bound that does not start with `prefix` differs from it at a unit
   * where the bound is higher, so it is past each such key: the keys all
   * count the bounds `prefix` counts (`KeyFamily`).
   */
  familyHead(prefix: string): number {
    if (prefix.length === 0) return -1;
    const u = prefix.charCodeAt(0);
    const h = this.#first[Math.min(u, ASCII_UNITS)]!;
    if (h >= 0) return h;
    for (const bound of this.#bounds[-h - 1]!) if (bound.length > prefix.length && bound.startsWith(prefix)) return -1;
    return this.headOf(prefix);
  }
}

/**
 * `given` read once into a list to check with `keyHeadsProblems`: its
 * length first (a sparse array or a Proxy can claim billions of entries),
 * then each entry once, so a getter answering differently on a second read
 * cannot slip past the check. Undefined list, with the problem, when it is
 * not an array, is too long or cannot be read.
 */
export function readKeyHeads(given: unknown, path: string): { list: unknown[]; problem?: string } {
  if (!isOptionArray(given)) return { list: [], problem: `${path} must be an array of key prefixes (strings), got ${describeValue(given)}` };
  try {
    const n = given.length;
    if (!(n <= MAX_KEY_HEADS)) return { list: [], problem: `${path} may hold at most ${MAX_KEY_HEADS} prefixes, got ${describeValue(n)}` };
    return { list: Array.from({ length: n }, (_, i) => given[i] as unknown) };
  } catch (err) {
    return { list: [], problem: `reading ${path} threw: ${errorText(err)}` };
  }
}

/**
 * `given` as a list of key prefixes, read once (`readKeyHeads`) and checked
 * (`keyHeadsProblems`, each prefix at most `maxLength` units), the messages
 * naming it `what`: the engine's and the queue's declarations check their
 * lists this way. Throws `ValidationError` with every problem otherwise.
 */
export function checkedKeyHeads(given: unknown, what: string, maxLength = MAX_KEY_HEAD_LENGTH): string[] {
  const read = readKeyHeads(given, what);
  const problems = read.problem === undefined ? keyHeadsProblems(read.list, what, maxLength) : [read.problem];
  if (problems.length > 0) throw new ValidationError("invalid key heads; nothing changed", problems);
  return read.list as string[];
}

/**
 * What is wrong with `prefixes` as `keyHeads`, as problems to report (none
 * when they are fine): an array of at most `MAX_KEY_HEADS` distinct,
 * non-empty ASCII strings of at most `maxLength` units, in any order.
 */
export function keyHeadsProblems(prefixes: readonly unknown[], path: string, maxLength = MAX_KEY_HEAD_LENGTH): string[] {
  const problems: string[] = [];
  if (prefixes.length > MAX_KEY_HEADS) return [`${path} may hold at most ${MAX_KEY_HEADS} prefixes, got ${prefixes.length}`];
  const seen = new Set<string>();
  prefixes.forEach((p, i) => {
    if (typeof p !== "string") problems.push(`${path}[${i}] must be a string, got ${typeof p}`);
    else if (p.length === 0 || p.length > maxLength) problems.push(`${path}[${i}] must be 1 to ${maxLength} characters long, got ${p.length}`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the whole ASCII range is allowed
    else if (!/^[\u0000-\u007f]*$/.test(p)) problems.push(`${path}[${i}] must be ASCII (code units below 128), got ${JSON.stringify(p)}`);
    else if (seen.has(p)) problems.push(`${path}[${i}] repeats the prefix ${JSON.stringify(p)}`);
    else seen.add(p);
  });
  return problems;
}
