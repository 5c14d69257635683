/**
 * @module The first place two lists of entries differ, as one line for an
 * assertion: `expect(firstDifference(got, want)).toBeUndefined()`. Vitest's
 * `toEqual` walks a list of thousands of entries element by element through
 * its generic equality, seconds per call under load; a model test that
 * compares whole scans many times spends most of its time there. Items are
 * primitives or tuples of primitives (`[key, value]`), compared with
 * `Object.is`; anything else is refused rather than compared by identity.
 */

type Item = unknown;

function isPlain(value: unknown): boolean {
  return value === null || (typeof value !== "object" && typeof value !== "function");
}

function sameItem(a: Item, b: Item): boolean {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!isPlain(a[i]) || !isPlain(b[i])) throw new TypeError(`firstDifference compares tuples of primitives, not ${show(a[i])} or ${show(b[i])}`);
      if (!Object.is(a[i], b[i])) return false;
    }
    return true;
  }
  if (!isPlain(a) && !Array.isArray(a)) throw new TypeError(`firstDifference compares primitives or tuples of them, not ${show(a)}`);
  if (!isPlain(b) && !Array.isArray(b)) throw new TypeError(`firstDifference compares primitives or tuples of them, not ${show(b)}`);
  return Object.is(a, b);
}

function show(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "number" && Object.is(value, -0)) return "-0";
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return Object.prototype.toString.call(value);
  return JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)) ?? String(value);
}

/** Where `got` first differs from `want` (an item, or one list ending first), with both lengths; undefined when they are the same. */
export function firstDifference(got: Iterable<Item>, want: Iterable<Item>): string | undefined {
  const g = Array.isArray(got) ? got : [...got];
  const w = Array.isArray(want) ? want : [...want];
  const n = Math.max(g.length, w.length);
  for (let i = 0; i < n; i++) {
    if (i < g.length && i < w.length && sameItem(g[i], w[i])) continue;
    return `entry ${i}: got ${i < g.length ? show(g[i]) : "nothing"}, want ${i < w.length ? show(w[i]) : "nothing"} (got ${g.length} entries, want ${w.length})`;
  }
  return undefined;
}
