/**
 * @module A key run's bounds check before its filter (`KeyRun.outside`,
 * `findInside`), exhaustively over small runs: every subset of keys at the
 * edges of the orders (the empty key, U+0000, U+007F, the last ASCII
 * character, a key and its extension by U+0000, U+00E9, U+FFFF against
 * astral characters, whose UTF-16 and UTF-8 orders disagree) made into a
 * run, asked for every key of the set and its neighbours, by string and by
 * bytes. A run finds exactly the keys it holds, whatever its bounds.
 */
import { describe, expect, it } from "vitest";
import { KeyBytes, KeyRunBuilder } from "../../runtime/engine/key-run.js";
import { compareKeys } from "../../runtime/store/keys.js";

const EDGE_KEYS = ["", "\u0000", "\u007f", "a", "a\u0000", "é", "\uffff", "😀", "\u{10ffff}"];

/** Keys next to `k`: extended by the least and greatest characters, and cut by one code point. */
function around(k: string): string[] {
  const out = [`${k}\u0000`, `${k}\u007f`, `${k}\u{10ffff}`, `${k}\uffff`];
  if (k.length > 0) out.push(Array.from(k).slice(0, -1).join(""));
  return out;
}

describe("a key run's bounds, over every subset of edge keys", () => {
  it("finds exactly the keys it holds, by string and by bytes", () => {
    const asked = [...new Set([...EDGE_KEYS, ...EDGE_KEYS.flatMap(around)])];
    const kb = new KeyBytes();
    const found = { valueAt: 0 };
    const wrong: string[] = [];
    let runs = 0;
    for (let mask = 1; mask < 1 << EDGE_KEYS.length; mask++) {
      const held = EDGE_KEYS.filter((_, i) => (mask & (1 << i)) !== 0).sort(compareKeys);
      const b = new KeyRunBuilder(held.length);
      for (const [i, k] of held.entries()) b.add(k, i);
      const run = b.finish();
      runs++;
      for (const k of asked) {
        const want = held.indexOf(k);
        const at = `${JSON.stringify(k)} in ${JSON.stringify(held)}`;
        const byString = run.find(k, kb.set(k), found);
        if (byString >= 0 !== want >= 0 || (byString >= 0 && run.value(found.valueAt) !== want)) wrong.push(`find ${at}`);
        // A key outside the bounds is one the run does not hold.
        if (run.outside(k) && want >= 0) wrong.push(`outside ${at}`);
        const byBytes = run.findBytes(kb.set(k), found);
        if (byBytes >= 0 !== want >= 0 || (byBytes >= 0 && run.value(found.valueAt) !== want)) wrong.push(`findBytes ${at}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(runs).toBe(2 ** EDGE_KEYS.length - 1);
  });
});
