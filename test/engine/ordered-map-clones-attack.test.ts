/**
 * @module Attacks on the ordered map's copy-on-write clones
 * (engine/ordered-map.ts): up to a dozen clones held at once, as readers
 * and checkpoints hold them, each with a cursor stopped in the middle of a
 * walk (either direction, from a bound or from an end), while the live map
 * and clones without a cursor go on being written (sets, deletes, drains
 * from the front as a queue empties), and clones of clones are taken. Each
 * cursor, resumed after thousands of writes elsewhere, must give exactly
 * the entries of its map at the time of the clone; each map must equal its
 * reference copy whenever it is checked.
 */
import { describe, expect, it } from "vitest";
import { OrderedMap } from "../../runtime/engine/ordered-map.js";
import { testRandom } from "../support/seed.js";

interface Held {
  map: OrderedMap<number>;
  model: Map<string, number>;
  /** A walk in progress: the map and its model are not written until it ends. */
  walk?: { cursor: Iterator<[string, number]>; seen: string[]; reverse: boolean; bound: string | undefined };
}

function sortedEntries(model: Map<string, number>): [string, number][] {
  return [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** The first difference between `map` and `model`, or undefined. */
function difference(map: OrderedMap<number>, model: Map<string, number>): string | undefined {
  const want = sortedEntries(model);
  const got = [...map.entries()];
  if (map.size !== model.size) return `size ${map.size}, expected ${model.size}`;
  if (got.length !== want.length) return `${got.length} entries walked, expected ${want.length}`;
  for (let i = 0; i < got.length; i++) if (got[i]![0] !== want[i]![0] || got[i]![1] !== want[i]![1]) return `entry ${i}: ${got[i]} expected ${want[i]}`;
  return undefined;
}

describe("OrderedMap clones held while writes go on", () => {
  it("cursors stopped mid-walk on a dozen clones resume with their clone's entries; every map matches its model", () => {
    const r = testRandom("ordered map clones");
    for (const space of [80, 900, 4000]) {
      const key = () => `k${String(r.int(space)).padStart(5, "0")}`;
      const live: Held = { map: new OrderedMap<number>(), model: new Map() };
      const held: Held[] = [live];
      for (let step = 0; step < 12_000; step++) {
        const pick = held[r.random() < 0.6 ? 0 : r.int(held.length)]!;
        const op = r.int(100);
        // A map with a walk in progress is only read (the map's contract); its writes go to the live map.
        const target = pick.walk !== undefined && op < 85 ? live : pick;
        if (op < 45) {
          const k = key();
          const v = r.int(1e6);
          const added = target.map.set(k, v);
          if (added !== !target.model.has(k)) expect.fail(`set ${k} answered ${added}`);
          target.model.set(k, v);
        } else if (op < 48) {
          // A drain from the front, as a queue empties in order: merges nodes the clones still share.
          for (let j = 0; j < 40; j++) {
            const first = target.map.entries().next();
            if (first.done) break;
            target.map.delete(first.value[0]);
            target.model.delete(first.value[0]);
          }
        } else if (op < 85) {
          const k = key();
          const removed = target.map.delete(k);
          if (removed !== target.model.delete(k)) expect.fail(`delete ${k} answered ${removed}`);
        } else if (op < 90) {
          if (held.length < 12) {
            const reverse = r.random() < 0.5;
            const bound = r.random() < 0.5 ? key() : undefined;
            const map = pick.map.clone();
            const cursor = reverse ? map.entriesReversed(bound) : map.entries(bound);
            held.push({ map, model: new Map(pick.model), walk: { cursor, seen: [], reverse, bound } });
          }
        } else if (op < 97) {
          const h = held[r.int(held.length)]!;
          const walk = h.walk;
          if (walk === undefined) continue;
          for (let j = 0; j < 25; j++) {
            const e = walk.cursor.next();
            if (!e.done) {
              walk.seen.push(e.value[0]);
              continue;
            }
            const b = walk.bound;
            let want = sortedEntries(h.model)
              .map(([k]) => k)
              .filter((k) => b === undefined || (walk.reverse ? k <= b : k >= b));
            if (walk.reverse) want = want.reverse();
            if (want.join() !== walk.seen.join()) expect.fail(`a walk resumed over ${space} keys gave ${walk.seen.length} keys, expected ${want.length}`);
            h.walk = undefined;
            break;
          }
        } else if (held.length > 1) {
          const i = 1 + r.int(held.length - 1);
          const diff = difference(held[i]!.map, held[i]!.model);
          if (diff !== undefined) expect.fail(`a clone dropped at step ${step}: ${diff}`);
          held.splice(i, 1);
        }
      }
      for (const h of held) expect(difference(h.map, h.model)).toBeUndefined();
    }
  });
});
