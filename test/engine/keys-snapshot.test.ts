/**
 * @module `LayeredState.keysSnapshot` (the engine's `keysSnapshot`, which a
 * queue's stats recount counts from across turns): the keys as they were
 * when it was taken, whatever is written after, against a plain map;
 * taken while a frozen memtable is half copied (without finishing the
 * copy: that is the long turn its slices avoid), over runs that merge and
 * whose entries are killed later, and scanned within prefixes and bounds.
 */
import { describe, expect, it } from "vitest";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { firstDifference } from "../support/first-difference.js";
import { testRandom } from "../support/seed.js";

const key = (i: number) => `${i % 3 === 0 ? "a" : "k"}/${String(i).padStart(5, "0")}`;

describe("a snapshot of the state's keys", () => {
  it("lists the keys as they were when taken, writes, a freeze's slices and merges after it notwithstanding", { timeout: 120_000 }, () => {
    for (let seed = 0; seed < 4; seed++) {
      const r = testRandom(`keys snapshot model ${seed}`);
      const state = new LayeredState({ memtableKeys: 40 + r.int(200), mergeRatio: 2 + r.int(3), writeSlice: 1 + r.int(4), idleSlice: 0 });
      const model = new Set<string>();
      const snaps: { keys: ReturnType<LayeredState["keysSnapshot"]>; model: string[]; frozen: boolean }[] = [];
      for (let op = 0; op < 4_000; op++) {
        const k = key(r.int(800));
        const pick = r.int(100);
        if (pick < 65) {
          state.set(k, r.int(1_000_000));
          model.add(k);
        } else if (pick < 90) {
          state.delete(k);
          model.delete(k);
        } else if (pick < 93) {
          const frozen = state.layout.frozen > 0;
          snaps.push({ keys: state.keysSnapshot(), model: [...model].sort(), frozen });
          // Taken without finishing the freeze.
          if (frozen) expect(state.layout.frozen).toBeGreaterThan(0);
        } else state.mergeStep(r.int(64));
      }
      expect(snaps.filter((s) => s.frozen).length, "snapshots taken while a freeze was half copied").toBeGreaterThan(3);
      for (const [i, s] of snaps.entries()) {
        expect(firstDifference([...s.keys.keys()], s.model), `snapshot ${i}`).toBeUndefined();
        expect(
          firstDifference(
            [...s.keys.keys({ prefix: "k/" })],
            s.model.filter((x) => x.startsWith("k/")),
          ),
          `snapshot ${i}, k/`,
        ).toBeUndefined();
        const [lo, hi] = [key(r.int(800)), key(r.int(800))].sort() as [string, string];
        expect(
          firstDifference(
            [...s.keys.keys({ start: lo, end: hi })],
            s.model.filter((x) => x >= lo && x < hi),
          ),
          `snapshot ${i}, ${lo} to ${hi}`,
        ).toBeUndefined();
      }
    }
  });
});
