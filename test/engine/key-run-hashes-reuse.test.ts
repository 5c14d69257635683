/**
 * @module Key-run builders that do not know their key count keep each key's
 * hash until `finish` builds the filter, in an array that builders hand on
 * to one another. Builders growing and finishing by turns must each build
 * the filter of their own keys: the same filter as a builder told its count.
 */
import { describe, expect, it } from "vitest";
import { KeyBytes, KeyRunBuilder, type KeyRun } from "../../runtime/engine/key-run.js";

const keysOf = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}/${String(i).padStart(6, "0")}`);
const one = Uint8Array.of(1);

/** What each of `probes` gets from the run's filter. */
function answers(run: KeyRun, probes: string[]): boolean[] {
  const kb = new KeyBytes();
  return probes.map((k) => run.mayHold(kb.set(k)));
}

describe("key-run builders handing on their hash arrays", () => {
  it("builders growing by turns, then one after another, each build their own keys' filter, the same as a builder told its count", () => {
    const a = keysOf("a", 5000);
    const b = keysOf("b", 9000);
    const c = keysOf("c", 3000);
    const ba = new KeyRunBuilder();
    const bb = new KeyRunBuilder();
    // By turns: each grows its array several times while the other does.
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i < a.length) ba.add(a[i]!, one);
      if (i < b.length) bb.add(b[i]!, one);
    }
    const runA = ba.finish();
    // After A gave its array back, C takes it and writes over it while B still builds.
    const bc = new KeyRunBuilder();
    for (const k of c) bc.add(k, one);
    const runB = bb.finish();
    const runC = bc.finish();
    const probes = [...keysOf("x", 4000), ...a, ...b, ...c];
    for (const [run, keys] of [
      [runA, a],
      [runB, b],
      [runC, c],
    ] as const) {
      const told = new KeyRunBuilder(1024, keys.length);
      for (const k of keys) told.add(k, one);
      expect(answers(run, probes)).toEqual(answers(told.finish(), probes));
      expect(answers(run, keys).every(Boolean)).toBe(true);
    }
  });
});
