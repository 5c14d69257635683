/**
 * Property test of the checkpoint's changed keys (changed-keys.ts) against
 * a `Map` of strings, with random keys of every kind (astral and BMP
 * characters above the surrogates, empty keys, keys tens of KB long, keys
 * that differ only in their last byte, keys set many times, deleted and
 * set again), and of the order a checkpoint writes them in
 * (change-order.ts) against the engine's `compareKeys`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { orderChanges } from "../../runtime/engine/change-order.js";
import { ChangedKeys, type ChangedValue } from "../../runtime/engine/changed-keys.js";
import { compareKeys } from "../../runtime/store/keys.js";

/** Keys of many kinds; `pool` makes the same keys come back. */
function keyArb(pool: readonly string[]): fc.Arbitrary<string> {
  const char = fc.oneof(
    fc.constantFrom("a", "z", "/", "\u0000", "\u007f", "\u0080", "é", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "\u{10000}", "\u{1f600}", "\u{10ffff}"),
    fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
  );
  const plain = fc.array(char, { maxLength: 12 }).map((cs) => cs.join(""));
  return fc.oneof(
    { weight: 4, arbitrary: plain },
    { weight: 3, arbitrary: fc.constantFrom(...pool) },
    // The same prefix, a different last character (one byte apart, or a multi-byte one).
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...pool), char).map(([p, c]) => p + c) },
    { weight: 1, arbitrary: fc.constant("") },
    // Long keys: past the map's first byte buffer at once.
    { weight: 1, arbitrary: fc.tuple(char, fc.integer({ min: 1000, max: 20_000 })).map(([c, n]) => `long/${c.repeat(n)}`) },
  );
}

const pool = ["k", "k/1", "k/2", "p/jobs/462789", "p/jobs/679192", "é/é", "\u{1f600}", "\uffff"];

type Op = { key: string; value: number | null };

const opsArb = fc.array(fc.record({ key: keyArb(pool), value: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.constant(null)) }), { maxLength: 400 });

function build(ops: readonly Op[]): { keys: ChangedKeys<ChangedValue>; model: Map<string, ChangedValue> } {
  const keys = new ChangedKeys<ChangedValue>();
  const model = new Map<string, ChangedValue>();
  for (const { key, value } of ops) {
    const v = value === null ? null : new Uint8Array([value & 0xff, value >> 8]);
    keys.set(key, v);
    model.set(key, v);
  }
  return { keys, model };
}

describe("ChangedKeys against a Map (property)", () => {
  it("holds the same keys and values, in insertion order, and answers absent keys as absent", () => {
    fc.assert(
      fc.property(opsArb, fc.array(keyArb(pool), { maxLength: 20 }), (ops, probes) => {
        const { keys, model } = build(ops);
        expect(keys.size).toBe(model.size);
        expect([...keys.entries()]).toEqual([...model.entries()]);
        for (const [k, v] of model) expect(keys.get(k)).toEqual(v);
        for (const p of probes) expect(keys.get(p)).toEqual(model.get(p));
      }),
      { numRuns: 300 },
    );
  });

  it("orders a checkpoint's entries as compareKeys orders the keys", async () => {
    await fc.assert(
      fc.asyncProperty(opsArb, async (ops) => {
        const { keys, model } = build(ops);
        const ordered = [
          ...(await orderChanges(
            keys,
            () => false,
            () => new Error("stopped"),
          )),
        ];
        const expected = [...model.entries()].sort(([a], [b]) => compareKeys(a, b));
        expect(ordered.map(([k]) => k)).toEqual(expected.map(([k]) => k));
        expect(ordered).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it("orders more keys than one sort chunk holds, set, deleted and set again, as compareKeys does", async () => {
    const keys = new ChangedKeys<ChangedValue>();
    const model = new Map<string, ChangedValue>();
    const chars = ["a", "é", "\uffff", "\u{1f600}", "\ue000", "/"];
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < 30_000; i++) {
        const key = `j/${chars[(i * 7) % chars.length]!}${(i * 2654435761) % 100_003}${chars[i % chars.length]!}`;
        const value = round === 1 ? null : new Uint8Array([round, i & 0xff]);
        keys.set(key, value);
        model.set(key, value);
      }
    expect(keys.size).toBe(model.size);
    const ordered = [
      ...(await orderChanges(
        keys,
        () => false,
        () => new Error("stopped"),
      )),
    ];
    const expected = [...model.entries()].sort(([a], [b]) => compareKeys(a, b));
    expect(ordered.length).toBe(expected.length);
    expect(ordered.map(([k]) => k)).toEqual(expected.map(([k]) => k));
    expect(ordered).toEqual(expected);
  });

  it("keeps keys of a megabyte and more whole, beside short ones", () => {
    const keys = new ChangedKeys<number>();
    const big = ["x".repeat(1 << 20), `${"é".repeat(1 << 19)}a`, `${"é".repeat(1 << 19)}b`, "\u{1f600}".repeat(1 << 18)];
    keys.set("short", 0);
    for (const [i, k] of big.entries()) keys.set(k, i + 1);
    keys.set("short2", 9);
    expect(keys.size).toBe(6);
    for (const [i, k] of big.entries()) expect(keys.get(k)).toBe(i + 1);
    expect(keys.get(`${"é".repeat(1 << 19)}c`)).toBeUndefined();
    expect([...keys.keys()]).toEqual(["short", ...big, "short2"]);
    expect(Math.sign(keys.compare(2, 3))).toBe(-1);
  });
});
