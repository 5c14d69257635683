/**
 * @module Ordering a checkpoint's changed keys without blocking the event
 * loop: the keys are sorted in chunks, one chunk per slice of work with
 * yields between, then merged lazily as the segment writer consumes them.
 *
 * The engine records changes in a hash map (cheap on every commit) instead
 * of an ordered tree; the ordering cost moves to the checkpoint, which runs
 * in the background and yields regularly.
 */
import { TurnPacer } from "./checkpoint-pace.js";
import type { DeltaMap } from "./sorted-map.js";
import type { ChangedValue } from "./changed-keys.js";

const CHUNK = 2048;

/**
 * The changes of `delta` (never mutated meanwhile) in ascending key order:
 * its entries but those that are no change (`isChange`: a key the state did
 * not hold when the delta began, deleted again), which are neither sorted
 * nor written. Sorting yields to the event loop in the slices of a
 * `TurnPacer`; `stopped` is checked at each yield and ends the sort early
 * with `onStop()`'s error. The sorted runs are entry numbers over the
 * delta's key bytes, so ordering holds no key strings: each is decoded as
 * the writer takes it.
 */
export async function orderChanges(delta: DeltaMap, stopped: () => boolean, onStop: () => Error): Promise<Iterable<[string, ChangedValue]>> {
  const byKey = (a: number, b: number) => delta.compare(a, b);
  const runs: Uint32Array[] = [];
  const pace = new TurnPacer();
  let next = 0;
  for (let left = delta.changes; left > 0; ) {
    const run = new Uint32Array(Math.min(CHUNK, left));
    for (let j = 0; j < run.length; next++) if (delta.isChange(next)) run[j++] = next;
    left -= run.length;
    runs.push(run.sort(byKey));
    if (pace.due()) {
      await pace.turn();
      if (stopped()) throw onStop();
    }
  }
  return { [Symbol.iterator]: () => mergeRuns(runs, delta) };
}

/** K-way merge of sorted runs of distinct keys through a binary min-heap of run heads. */
function* mergeRuns(runs: Uint32Array[], delta: DeltaMap): Generator<[string, ChangedValue]> {
  const pos = runs.map(() => 0);
  const heap: number[] = [];
  const head = (r: number) => runs[r]![pos[r]!]!;
  const less = (a: number, b: number) => delta.compare(head(a), head(b)) < 0;
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  for (let r = 0; r < runs.length; r++) if (runs[r]!.length > 0) heap.push(r);
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i);
  while (heap.length > 0) {
    const r = heap[0]!;
    const e = head(r);
    yield [delta.keyAt(e), delta.valueAt(e)];
    if (++pos[r]! < runs[r]!.length) down(0);
    else {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
      if (heap.length > 0) down(0);
    }
  }
}
