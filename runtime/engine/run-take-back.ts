/**
 * @module Young key runs walked back into a memtable that just grew, a
 * slice at a time (see docs/engine.md, "A grown memtable takes its young
 * runs back").
 *
 * When the memtable grows because its writes keep killing entries frozen
 * a few freezes ago, the runs those freezes made hold the rest of the
 * working set: each of their entries would otherwise be searched for and
 * killed once more as the next pass rewrites its key, and the runs merged
 * or rewritten meanwhile, though every entry they copy dies soon after.
 * This walks their live entries in key order, one run after the other,
 * handing each to the state, which moves it into the memtable and marks it
 * dead in its run. A cursor stays on each run between slices: entries only
 * die meanwhile, which the cursor skips.
 *
 * Pure data structure: no IO.
 */
import { RunCursor } from "./key-run.js";
import type { Layer } from "./run-merge.js";

/** Where `RunTakeBack.step` hands each live entry: its run, index, key and where its value starts. */
export type TakeEntry = (layer: Layer, index: number, key: string, valueAt: number) => void;

/** Runs being walked back into the memtable: see the module documentation. */
export class RunTakeBack {
  /** Runs still to walk, the one `#cursor` walks first. */
  readonly #layers: Layer[];
  #cursor: RunCursor | undefined;

  /** `layers`: the runs to take back, in the order to walk them. */
  constructor(layers: readonly Layer[]) {
    this.#layers = [...layers];
  }

  /** Whether `layer` is one of the runs not yet walked to its end (merges leave those alone). */
  includes(layer: Layer): boolean {
    return this.#layers.includes(layer);
  }

  /** Live entries left in the runs not yet walked to their end, at most. */
  get remaining(): number {
    let n = 0;
    for (const l of this.#layers) n += l.live.live;
    return n;
  }

  /** Hands up to `entries` more live entries to `take`; true when every run was walked to its end. */
  step(entries: number, take: TakeEntry): boolean {
    let n = 0;
    while (this.#layers.length > 0) {
      const layer = this.#layers[0]!;
      this.#cursor ??= new RunCursor(layer.run, layer.live);
      const c = this.#cursor;
      for (;;) {
        if (n >= entries) return false;
        if (!c.advance()) break;
        take(layer, c.index, c.keyString(), c.valueAt);
        n++;
      }
      this.#layers.shift();
      this.#cursor = undefined;
    }
    return true;
  }
}
