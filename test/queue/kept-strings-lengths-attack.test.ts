/**
 * @module Attacks on kept-string look-ups that skip a name whose length no
 * kept name has: names of every length next to the kept ones (one shorter,
 * the same, one longer), at the edge of the counted lengths (511, 512,
 * 513), empty names, names whose length counts surrogate pairs as two, a
 * name kept again with another value, and generations of 0, 1, 2 and 7
 * names. Every look-up answers what a model of the two generations holds.
 */
import { describe, expect, it } from "vitest";
import { KeptStrings } from "../../runtime/queue/kept-strings.js";
import { testRandom, type TestRandom } from "../support/seed.js";

/** Two generations as the class documents them: a found old name moves to the young one. */
class Model {
  young = new Map<string, string>();
  old = new Map<string, string>();
  constructor(readonly generation: number) {}
  get(name: string): string | undefined {
    const y = this.young.get(name);
    if (y !== undefined) return y;
    const o = this.old.get(name);
    if (o !== undefined) this.keep(name, o);
    return o;
  }
  keep(name: string, value: string): void {
    if (this.young.size >= this.generation) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(name, value);
  }
}

const LENGTHS = [0, 1, 2, 30, 31, 32, 100, 510, 511, 512, 513, 514, 700];

/** A name of `length` UTF-16 units: ASCII, or with surrogate pairs (each two units) and a BMP character. */
function nameOf(r: TestRandom, length: number): string {
  const kind = r.int(3);
  if (kind === 0) return String.fromCharCode(97 + r.int(3)).repeat(length);
  if (kind === 1) return `${"😀".repeat(length >> 1)}${length % 2 === 1 ? "é" : ""}`;
  let s = "";
  for (let i = 0; i < length; i++) s += String.fromCharCode(97 + r.int(2));
  return s;
}

describe("kept strings, look-ups by length attacked", () => {
  it.each([0, 1, 2, 7])("a generation of %s: names one shorter, as long and one longer than the kept ones answer as a model", (generation) => {
    const r = testRandom(`kept strings lengths ${generation}`);
    const kept = new KeptStrings(generation);
    const model = new Model(generation);
    const names: string[] = [];
    for (let i = 0; i < 4000; i++) {
      const base = LENGTHS[r.int(LENGTHS.length)]!;
      const length = Math.max(0, base + r.int(3) - 1);
      // Now a name seen before (maybe kept, maybe dropped), now a new one.
      const name = names.length > 0 && r.int(3) === 0 ? names[r.int(names.length)]! : nameOf(r, length);
      names.push(name);
      if (names.length > 200) names.shift();
      const op = r.int(3);
      if (op === 0) {
        // Kept again, maybe with another value: the look-up answers the newest.
        const value = `v${i}`;
        expect(kept.keep(name, value)).toBe(value);
        model.keep(name, value);
      } else {
        const expected = model.get(name);
        expect(kept.get(name), `${i}: a name of ${name.length} units`).toBe(expected);
        // Names of the same text cut and grown by one unit miss unless kept themselves.
        for (const near of [name.slice(0, -1), `${name}x`]) expect(kept.get(near), `${i}: near ${near.length}`).toBe(model.get(near));
      }
    }
  });

  it("a name kept in both generations under different values answers the young one, and the old one once the young is dropped", () => {
    const kept = new KeptStrings(2);
    kept.keep("a".repeat(511), "first");
    kept.keep("b".repeat(512), "x");
    // Rotates: both above are now old; the same 511-unit name is kept young with a new value.
    kept.keep("a".repeat(511), "second");
    expect(kept.get("a".repeat(511))).toBe("second");
    expect(kept.get("b".repeat(512))).toBe("x");
    expect(kept.get("a".repeat(510))).toBeUndefined();
    expect(kept.get("a".repeat(512))).toBeUndefined();
    expect(kept.get("b".repeat(513))).toBeUndefined();
    kept.keep("", "empty");
    expect(kept.get("")).toBe("empty");
  });
});
