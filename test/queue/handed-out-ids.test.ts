/**
 * @module The ids a queue handed out and not yet inserted, held as a sorted
 * array between two indexes: against a model (an insertion-ordered set that
 * drops its oldest id past the limit), with ids mostly ascending as draws
 * are, some out of order and repeated, taken from either end or the middle.
 */
import { describe, expect, it } from "vitest";
import { HandedOutIds } from "../../runtime/queue/handed-out-ids.js";
import { testRandom } from "../support/seed.js";

/** What the queue kept before: a set, its oldest id dropped when full. */
class ModelIds {
  readonly ids = new Set<string>();
  constructor(readonly limit: number) {}
  add(id: string): void {
    if (this.ids.size >= this.limit)
      for (const oldest of this.ids) {
        this.ids.delete(oldest);
        break;
      }
    this.ids.add(id);
  }
  take(id: string): boolean {
    return this.ids.delete(id);
  }
}

const idOf = (n: number) => n.toString(36).padStart(8, "0");

describe("ids handed out", () => {
  for (const [limit, outOfOrder] of [
    [3, false],
    [16, false],
    [1000, false],
    [3, true],
    [16, true],
    [1000, true],
  ] as const) {
    it(`hold what a set dropping its oldest holds, taken in any order (limit ${limit}${outOfOrder ? ", some ids out of order" : ""})`, () => {
      const { random, int } = testRandom(`handed-out ids, limit ${limit}, out of order ${outOfOrder}`);
      const held = new HandedOutIds(limit);
      const model = new ModelIds(limit);
      /** Ids added and not taken since, whatever the limit dropped. */
      const outstanding = new Set<string>();
      let dropped = false;
      let next = 1000;
      const drawn: string[] = [];
      for (let step = 0; step < 5_000; step++) {
        const r = random();
        if (r < 0.45) {
          // The next draw; with `outOfOrder`, now and then an earlier id, or one held already.
          const id = !outOfOrder || random() < 0.9 ? idOf(next++) : random() < 0.5 ? idOf(next - 1 - int(Math.min(next - 1000, 50) + 1)) : idOf(900 + int(50));
          drawn.push(id);
          if (model.ids.size >= limit) dropped = true;
          held.add(id);
          model.add(id);
          outstanding.add(id);
        } else if (drawn.length > 0) {
          // Taken mostly as drawn, oldest first, else newest, else anywhere, or an id never handed out.
          const pick = random();
          const i = pick < 0.5 ? 0 : pick < 0.7 ? drawn.length - 1 : int(drawn.length);
          const id = random() < 0.05 ? idOf(500 + int(400)) : drawn.splice(i, 1)[0]!;
          const took = held.take(id);
          const expected = model.take(id);
          // Out of order, the limit may drop another id than the set's oldest: never one it does not hold.
          if (outOfOrder && dropped) expect(!took || outstanding.has(id)).toBe(true);
          else expect(took).toBe(expected);
          outstanding.delete(id);
        }
        expect(held.size).toBeLessThanOrEqual(limit);
        if (!(outOfOrder && dropped)) expect(held.size).toBe(model.ids.size);
      }
      // Whatever is left is held until taken, once.
      if (!(outOfOrder && dropped)) for (const id of model.ids) expect(held.take(id)).toBe(true);
      for (const id of outstanding) held.take(id);
      expect(held.size).toBe(0);
      for (const id of outstanding) expect(held.take(id)).toBe(false);
    });
  }
});
