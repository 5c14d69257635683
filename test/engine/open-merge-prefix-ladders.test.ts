/**
 * @module Open's merge of segment runs over keys that are prefixes of one
 * another at every length, in characters of one to four UTF-8 bytes (a
 * prefix can end right before or after any of them, never inside one): the
 * merge compares a leading run's next key only from the byte where the key
 * before it differed, and stores a section's key tails unchecked, so a
 * shared length counted wrong shows here as a key in the wrong place or a
 * value under another key.
 */
import { describe, expect, it } from "vitest";
import { loadSegments } from "../../runtime/engine/recovery.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { ctxOf, type Entries, model, POLICY, show, storeOf } from "../support/segment-runs.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** Stems whose every prefix (by whole characters) is a key: ASCII, two-, three- and four-byte characters, and U+FFFF beside U+10000. */
const STEMS = [
  "j/abcab",
  "p/\u00e9\u00e9e\u00e9",
  "p/\u20ac\u20aca\u20ac",
  "x/\u{1f600}\u{1f600}a\u{1f601}",
  "x/\uffff\u{10000}\uffff",
  "j/\u00e9\u{1f600}\u20aca",
];

/** Every prefix of `stem` of at least three characters, cut between characters (a surrogate pair kept whole). */
function ladder(stem: string): string[] {
  const chars = [...stem];
  return chars.slice(2).map((_, i) => chars.slice(0, i + 3).join(""));
}

/** One run: a stretch of each ladder (rungs in order, some deleted, values naming the key), as a fill's checkpoint holds. */
function runOf(r: TestRandom, keys: readonly string[]): Entries {
  const from = r.int(keys.length);
  const to = Math.min(keys.length, from + 1 + r.int(keys.length));
  const entries = new Map<string, Uint8Array | undefined>();
  for (const k of keys.slice(from, to)) {
    if (r.int(3) === 0) continue;
    const form = r.int(8);
    entries.set(k, form === 0 ? undefined : form < 3 ? enc(k.slice(-1)) : enc(`${k}#${form === 7 ? "v".repeat(80) : r.int(1000)}`));
  }
  return [...entries].sort(([a], [b]) => compareKeys(a, b));
}

describe("open merge of keys that are prefixes of one another at every length", () => {
  it("gives the model's state for runs of ladders in every order, each run leading for a stretch", async () => {
    const r = testRandom("open merge prefix ladders");
    // Each rung, and each rung continued by each kind of character: a key ends where another goes on.
    const rungs = STEMS.flatMap(ladder);
    const keys = [...new Set(rungs.flatMap((k) => ["", "\u0000", "a", "\u00e9", "\u20ac", "\u{1f600}"].map((c) => k + c)))].sort(compareKeys);
    for (let round = 0; round < 12; round++) {
      const runs = Array.from({ length: 2 + r.int(12) }, () => runOf(r, keys));
      const want = model(runs);
      const { store, manifest } = await storeOf(runs, 1 + r.int(20));
      const state = (await loadSegments(ctxOf(store), manifest, undefined, POLICY))!;
      state.stopIdleMerges();
      for (const k of keys) expect(show(k, state.get(k)), `round ${round}: ${JSON.stringify(k)}`).toBe(want.get(k) ?? "absent");
      const sorted = [...want.keys()].sort(compareKeys);
      expect(
        [...state.scan()].map(([k, v]) => `${k}=${show(k, v)}`),
        `round ${round}`,
      ).toEqual(sorted.map((k) => `${k}=${want.get(k)}`));
      expect(
        [...state.scan({ reverse: true })].map(([k]) => k),
        `round ${round}`,
      ).toEqual([...sorted].reverse());
    }
  });
});
