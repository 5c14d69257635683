/**
 * @module Manifests decoded while `Array.prototype` or `Object.prototype`
 * holds an index ("0", "1") as a setter or a read-only field. msgpackr
 * assigns each element of an array it builds, so a setter there took a
 * manifest's first segment or fence (the fence list read `[hole, 5]`, which
 * the checks let through as they skip holes) and the decode's fallback,
 * maps as `Map`s, built its arrays the same way: the manifest read as
 * corrupted, whose error tells the operator to restore the store from a
 * backup. Each decodes to its own elements, and the defining decoder the
 * fallback uses gives what msgpackr gives for any plain value.
 *
 * Nothing runs between defining the index and removing it but the decode:
 * an index setter takes every `push` of the process, the test's too.
 */
import { describe, expect, it } from "vitest";
import { pack, unpack } from "msgpackr";
import { decodeManifest, encodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { decodeDefining } from "../../runtime/engine/defining-decode.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { underIndexes } from "../support/polluted-prototype.js";

const MANIFEST: Manifest = {
  id: 3,
  epoch: 2,
  walNext: 9,
  segments: [
    { name: "seg/1", bytes: 10, entries: 2, firstKey: "a", lastKey: "b", run: 3 },
    { name: "seg/2", bytes: 12, entries: 4, firstKey: "c", lastKey: "d", run: 4 },
  ],
  fences: [4, 5],
  createdAt: 5,
};

const counted = () => {
  const calls = { n: 0 };
  return { calls, descriptor: { get: () => "planted", set: () => void calls.n++ } satisfies PropertyDescriptor };
};

describe("a manifest decoded under an index on a prototype", () => {
  for (const [where, target] of [
    ["Array.prototype", Array.prototype],
    ["Object.prototype", Object.prototype],
  ] as const) {
    it(`keeps its first segment and fence under a setter of "0" and "1" on ${where}`, () => {
      const bytes = encodeManifest(MANIFEST);
      const { calls, descriptor } = counted();
      const got = underIndexes(target, ["0", "1"], descriptor, () => {
        const m = decodeManifest("manifest/3", bytes, 3);
        // Read while the setter is there: an element the decode left out would read the getter's value.
        return JSON.stringify({ ...m, segments: m.segments.map((s) => ({ ...s })), fences: m.fences.map((f) => f) });
      });
      expect(got.error).toBeUndefined();
      expect(JSON.parse(got.value!)).toEqual(MANIFEST);
      // The index was seen before the decode, which defined each element: the setter never ran.
      expect(calls.n).toBe(0);
    });

    it(`decodes under a read-only "0" on ${where}`, () => {
      const bytes = encodeManifest(MANIFEST);
      const got = underIndexes(target, ["0"], { value: "planted", writable: false }, () => {
        const m = decodeManifest("manifest/3", bytes, 3);
        return [m.segments[0]!.name, m.fences[0]!].join(",");
      });
      expect(got.error).toBeUndefined();
      expect(got.value).toBe("seg/1,4");
    });
  }

  it("keeps them under both a field setter (which decodes by definition at once) and an index setter", () => {
    const bytes = encodeManifest(MANIFEST);
    const { descriptor } = counted();
    Object.defineProperty(Object.prototype, "run", { ...descriptor, configurable: true });
    try {
      const got = underIndexes(Array.prototype, ["0"], descriptor, () => {
        const m = decodeManifest("manifest/3", bytes, 3);
        return `${m.segments[0]!.name}:${m.segments[0]!.run}:${m.fences[0]}`;
      });
      expect(got.error).toBeUndefined();
      expect(got.value).toBe("seg/1:3:4");
    } finally {
      delete (Object.prototype as Record<string, unknown>).run;
    }
  });
});

/** A random plain value of the kinds records hold. */
function plainValue(r: TestRandom, depth: number): unknown {
  const pick = r.int(depth > 2 ? 9 : 12);
  switch (pick) {
    case 0:
      return null;
    case 1:
      return r.int(2) === 0;
    case 2:
      return r.int(256) - 128;
    case 3:
      return [0x7fff, 0xffff, 0x7fffffff, 0xffffffff, 2 ** 40 + 3, -(2 ** 31), -(2 ** 40)][r.int(7)];
    case 4:
      return r.random() * 1e6 - 5e5;
    case 5:
      return "x".repeat(r.int(40)) + String.fromCodePoint(0x20 + r.int(0x2000));
    case 6:
      return "y".repeat([0, 31, 32, 255, 256, 70_000][r.int(depth === 0 ? 6 : 5)]!);
    case 7:
      return new Uint8Array(r.int(300)).map(() => r.int(256));
    case 8:
      return new Date(r.int(2 ** 31) * 1000 + r.int(1000));
    case 9:
    case 10:
      return Array.from({ length: r.int(8) }, () => plainValue(r, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: r.int(8) }, (_, i) => [`k${i}${r.int(3)}`, plainValue(r, depth + 1)]));
  }
}

/** `v` with msgpackr's `Buffer`s as plain `Uint8Array`s, as the defining decoder gives binary. */
function withPlainBytes(v: unknown): unknown {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (Array.isArray(v)) return v.map(withPlainBytes);
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withPlainBytes(x)]));
  }
  return v;
}

describe("the defining decoder", () => {
  it("gives what msgpackr gives for plain values", () => {
    const r = testRandom("defining decoder");
    for (let round = 0; round < 200; round++) {
      const bytes = pack(plainValue(r, 0));
      expect(decodeDefining(bytes)).toEqual(withPlainBytes(unpack(bytes)));
    }
    // The undefined inside an array and a 64-bit integer msgpackr writes.
    const bytes = pack([undefined, 2n ** 63n - 1n, -(2n ** 62n)]);
    expect(decodeDefining(bytes)).toEqual(unpack(bytes));
  });

  it("refuses bytes that end inside a value", () => {
    const bytes = pack({ a: "a long enough string", b: [1, 2, 3] });
    for (const cut of [1, 5, bytes.length - 1]) expect(() => decodeDefining(bytes.subarray(0, cut))).toThrow(/ends inside a value|longer than the bytes left/);
  });
});
