/**
 * @module Random values of every kind a job record's fields hold, for the
 * record writers' property tests: text of every UTF-8 length around the
 * MessagePack header boundaries (lone surrogates included), numbers of
 * every MessagePack form and none (NaN, infinities, 1e30), byte strings of
 * every size class.
 */
import type { TestRandom } from "../support/seed.js";

/** Characters of every UTF-8 length, lone surrogates and a pair included. */
const CHARS = ["a", "Z", "0", "/", "\u007f", "é", "\u07ff", "\u0800", "中", "\uffff", "😀", "\ud800", "\udfff"];

export function text(r: TestRandom): string {
  // Lengths around the header boundaries (32, 64, 256, 65536 units or bytes).
  const lengths = [0, 1, 31, 32, 33, 63, 64, 85, 86, 255, 256, 257, 1000, 21845, 21846, 65535, 65536, 70000];
  const n = r.random() < 0.9 ? r.int(40) : lengths[r.int(lengths.length)]!;
  const ascii = r.random() < 0.6;
  // A random run of up to 300 units, repeated to the length (long strings stay cheap to build).
  const run: string[] = [];
  for (let i = 0; i < Math.min(n, 300); i++) run.push(ascii ? String.fromCharCode(32 + r.int(95)) : CHARS[r.int(CHARS.length)]!);
  return run
    .join("")
    .repeat(Math.ceil(n / Math.max(1, run.length)))
    .slice(0, n);
}

export function num(r: TestRandom): number {
  const picks = [
    0,
    -0,
    1,
    31,
    32,
    127,
    128,
    255,
    256,
    65535,
    65536,
    2 ** 32 - 1,
    2 ** 32,
    -1,
    -32,
    -33,
    -128,
    -129,
    -32768,
    -32769,
    -(2 ** 31),
    -(2 ** 31) - 1,
    1.5,
    -2.25,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    1_764_000_000_000 + r.int(1e9),
    Number.MAX_SAFE_INTEGER,
    1e30,
  ];
  return r.random() < 0.5 ? r.int(2 ** 20) : picks[r.int(picks.length)]!;
}

export function bytes(r: TestRandom): Uint8Array {
  const sizes = [0, 1, 255, 256, 65535, 65536, 70000];
  const n = r.random() < 0.7 ? r.int(300) : sizes[r.int(sizes.length)]!;
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = r.int(256);
  return b;
}
