/**
 * @module Merging key runs a slice at a time, and which runs to merge.
 *
 * A merge copies the live entries of its input runs into one new run, a
 * bounded number of entries per call, while the inputs stay the readable
 * copy of their keys. Its inputs keep changing while it runs: a write kills
 * an entry (entries never change otherwise). An entry not yet copied is read
 * as it is when it is copied (the cursors skip what died, and a cursor's head
 * is checked again when it is copied); an entry already copied has its copy
 * killed through a map from each input entry to its output entry (4 bytes
 * per input entry while the merge runs). A run rewritten alone needs no map:
 * its entries keep their order, so an entry's copy is the number of entries
 * copied before it, counted from a bit per entry and a count per block (about
 * 0.25 bytes per entry; the map would be 4, 80 MB over a half-drained run of
 * 20M entries). So when the output replaces its inputs it holds exactly their
 * live entries.
 *
 * Pure data structure: no IO.
 */
import { BLOCK_ENTRIES, compareBytes, type KeyRun, KeyRunBuilder, RunCursor } from "./key-run.js";
import { RunLiveness } from "./run-liveness.js";

/** Merges of inputs of at least this many bytes write into a buffer bounded up front. */
const MIN_BOUNDED_BYTES = 64 * 1024;

/** A run with its dead bits; `input` is its index among the inputs of the merge in progress, or -1. */
export interface Layer {
  run: KeyRun;
  live: RunLiveness;
  input: number;
}

/** A new layer over `run`, every entry live. */
export function layerOf(run: KeyRun): Layer {
  return { run, live: new RunLiveness(run.count, BLOCK_ENTRIES), input: -1 };
}

/** One merge in progress: see the module documentation. */
export class RunMerge {
  readonly inputs: readonly Layer[];
  readonly #cursors: RunCursor[] = [];
  /** The input of each cursor in `#cursors`. */
  readonly #cursorInput: number[] = [];
  /** Per input of a merge of several: the output index of each entry copied (-1 until then). */
  readonly #outIndex: Int32Array[];
  /** A run rewritten alone: a bit per entry, set when it was copied. */
  readonly #copied: Uint8Array | undefined;
  /** A run rewritten alone: per block, the entries copied before it (set once a copy reaches the block). */
  readonly #copiedBefore: Int32Array | undefined;
  /** The last block whose `#copiedBefore` is set. */
  #countedBlock = -1;
  /** Per input: the index of the last entry it copied or passed. */
  readonly #passed: number[];
  readonly #builder: KeyRunBuilder;
  /** Output entries killed after they were copied. */
  readonly #dead: Uint8Array;
  #killed = 0;
  /** Input entries left to pass, at most (they only die meanwhile). */
  #remaining = 0;

  /** Starts merging `inputs` (marks them as its inputs). */
  constructor(inputs: Layer[]) {
    this.inputs = inputs;
    let estimate = 0;
    for (const [i, l] of inputs.entries()) {
      l.input = i;
      this.#remaining += l.live.live;
      estimate += Math.ceil((l.run.bytes.length * l.live.live) / Math.max(1, l.run.count));
    }
    // Bounded up front, so the output is written into one plain buffer, never copied nor grown: pages past the bytes
    // written are never touched. An entry can take a few bytes more than in its input (a block's first key written
    // whole, a value no longer the same as its new neighbour's); past the bound, the builder still carries on. A small
    // merge keeps the shared pool's buffers (its run is plain either way).
    const bound = estimate >= MIN_BOUNDED_BYTES ? estimate + Math.ceil(estimate / 8) + 1024 : -1;
    this.#builder = new KeyRunBuilder(estimate + 1024, this.#remaining, bound);
    this.#dead = new Uint8Array(Math.ceil(this.#remaining / 8) + 1);
    if (inputs.length === 1) {
      const run = inputs[0]!.run;
      this.#outIndex = [];
      this.#copied = new Uint8Array(Math.ceil(run.count / 8));
      this.#copiedBefore = new Int32Array(Math.ceil(run.count / BLOCK_ENTRIES));
    } else {
      this.#outIndex = inputs.map((l) => new Int32Array(l.run.count).fill(-1));
    }
    this.#passed = inputs.map(() => -1);
    for (const [i, l] of inputs.entries()) {
      const c = new RunCursor(l.run, l.live);
      if (!c.advance()) continue;
      this.#cursors.push(c);
      this.#cursorInput.push(i);
    }
  }

  /** Entries left to copy, at most. */
  get remaining(): number {
    return this.#remaining;
  }

  /** Whether every entry was copied (`finish` may be called). */
  get done(): boolean {
    return this.#cursors.length === 0;
  }

  /** Copies up to `budget` entries (dead ones passed count too); returns whether entries remain. */
  step(budget: number): boolean {
    const cursors = this.#cursors;
    const builder = this.#builder;
    while (budget-- > 0 && cursors.length > 0) {
      let best = 0;
      for (let i = 1; i < cursors.length; i++) if (compareKeyBytes(cursors[i]!, cursors[best]!) < 0) best = i;
      const c = cursors[best]!;
      const input = this.#cursorInput[best]!;
      // The cursor checked this entry when it stepped on it; it may have died since.
      if (!this.inputs[input]!.live.isDead(c.index)) {
        this.#noteCopy(input, c.index, builder.count);
        builder.addFrom(c.run, c.keyBuf, c.keyLen, c.valueAt);
      }
      this.#passed[input] = c.index;
      this.#remaining = Math.max(0, this.#remaining - 1);
      if (!c.advance()) {
        cursors.splice(best, 1);
        this.#cursorInput.splice(best, 1);
      }
    }
    return cursors.length > 0;
  }

  /** Notes that entry `index` of input `input` is copied as output entry `out`. */
  #noteCopy(input: number, index: number, out: number): void {
    const copied = this.#copied;
    if (copied === undefined) {
      this.#outIndex[input]![index] = out;
      return;
    }
    const block = Math.floor(index / BLOCK_ENTRIES);
    while (this.#countedBlock < block) this.#copiedBefore![++this.#countedBlock] = out;
    copied[index >>> 3]! |= 1 << (index & 7);
  }

  /** The output index of entry `index` of input `input`, or -1 when it was not copied. */
  #outputOf(input: number, index: number): number {
    const copied = this.#copied;
    if (copied === undefined) return this.#outIndex[input]![index]!;
    if ((copied[index >>> 3]! & (1 << (index & 7))) === 0) return -1;
    const block = Math.floor(index / BLOCK_ENTRIES);
    let out = this.#copiedBefore![block]!;
    for (let i = block * BLOCK_ENTRIES; i < index; i++) if ((copied[i >>> 3]! & (1 << (i & 7))) !== 0) out++;
    return out;
  }

  /** Entry `index` of input `input` died: its copy dies too (one not copied yet is skipped when reached). */
  killed(input: number, index: number): void {
    if (index > this.#passed[input]!) return;
    const o = this.#outputOf(input, index);
    if (o < 0) return;
    // Counted once: a second call for the same entry would make `finish` drop a live output.
    const bit = 1 << (o & 7);
    if ((this.#dead[o >>> 3]! & bit) !== 0) return;
    this.#dead[o >>> 3]! |= bit;
    this.#killed++;
  }

  /** The output, once `done` (undefined when nothing in it stayed live); unmarks the inputs. */
  finish(): Layer | undefined {
    for (const l of this.inputs) l.input = -1;
    const count = this.#builder.count;
    if (count === this.#killed) return undefined;
    const out = layerOf(this.#builder.finish());
    if (this.#killed > 0) {
      const dead = this.#dead;
      for (let at = 0; at < dead.length; at++) {
        const byte = dead[at]!;
        if (byte === 0) continue;
        for (let bit = 0; bit < 8; bit++) {
          const o = at * 8 + bit;
          if ((byte & (1 << bit)) !== 0 && o < count) out.live.kill(o, Math.floor(o / BLOCK_ENTRIES));
        }
      }
    }
    return out;
  }
}

function compareKeyBytes(a: RunCursor, b: RunCursor): number {
  return compareBytes(a.keyBuf, a.keyLen, b.keyBuf, b.keyLen);
}

/** Runs at least this large and more than half dead are rewritten alone. */
const MIN_REWRITE = 1024;

/** The tier of a run of `live` entries: 0 up to `base` entries, then one more per factor of `ratio`. */
function tierOf(live: number, base: number, ratio: number): number {
  let t = 0;
  for (let cap = base; live > cap; cap *= ratio) t++;
  return t;
}

/**
 * Which runs to merge next, or undefined: every run of the lowest tier
 * holding at least `ratio` runs (tiers by live entries, so each key is
 * rewritten about log_ratio(keys / base) times); else the run with the most
 * dead entries when more than half of it is dead; else, when `force`, the
 * `ratio` (at least two) runs with the fewest live entries. Runs of more
 * than `maxEntries / ratio` live entries join no tier merge: a merge holds
 * its inputs and its output at once, so merging runs of any size would make
 * the largest merge of a state of n keys hold about 2n keys' bytes.
 */
export function pickMerge(layers: readonly Layer[], base: number, ratio: number, force: boolean, maxEntries = Infinity): Layer[] | undefined {
  const tiers = new Map<number, Layer[]>();
  for (const l of layers) {
    if (l.live.live * ratio > maxEntries) continue;
    const t = tierOf(l.live.live, base, ratio);
    const list = tiers.get(t);
    if (list === undefined) tiers.set(t, [l]);
    else list.push(l);
  }
  let pick: Layer[] | undefined;
  let pickTier = Infinity;
  for (const [t, list] of tiers) {
    if (list.length >= ratio && t < pickTier) {
      pick = list;
      pickTier = t;
    }
  }
  if (pick !== undefined) return pick;
  let worst: Layer | undefined;
  for (const l of layers) {
    const dead = l.run.count - l.live.live;
    if (l.run.count >= MIN_REWRITE && l.live.live * 2 < l.run.count && (worst === undefined || dead > worst.run.count - worst.live.live)) worst = l;
  }
  if (worst !== undefined) return [worst];
  if (!force || layers.length < 2) return undefined;
  return [...layers].sort((a, b) => a.live.live - b.live.live).slice(0, Math.max(2, ratio));
}
