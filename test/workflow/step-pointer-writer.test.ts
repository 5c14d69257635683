/**
 * @module A continuing step's pointer written field by field
 * (`encodeNextStepPointer`): the bytes `encodeStepPointer` writes for the
 * same pointer, built as `continueRun` and `stageSignalWait` build it, over
 * every integer form, string length class and odd value, so pointers stay
 * equal to, and readable by, those written before (a step out of range
 * reads as damage).
 */
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "taquba";
import { decodeStepPointer, encodeNextStepPointer, encodeStepPointer, type StepPointer } from "../../runtime/workflow/records/records.js";
import { type TestRandom, testRandom } from "../support/seed.js";

function pick<T>(r: TestRandom, list: readonly T[]): T {
  return list[r.int(list.length)]!;
}

/** Text of each MessagePack string class (fixstr, str8, str16, str32), ASCII or not. */
function text(r: TestRandom): string {
  const n = pick(r, [0, 1, 31, 32, 255, 256, 65_535, 65_536, 70_000]);
  if (r.int(2) === 0) return "j".repeat(n);
  // Whole code points only: a cut surrogate pair would decode to U+FFFD on both sides alike, and hide nothing.
  return "é☃😀".repeat(Math.ceil(n / 4));
}

const STEPS = [0, 1, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, -1, -33, 1.5, 1e30, -0];

/** A pointer with its fields set in `continueRun`'s order: step and job id, then a name, then (a signal wait) its key. */
function pointerOf(r: TestRandom): StepPointer {
  const p: StepPointer = { step: pick(r, STEPS), jobId: text(r) };
  if (r.int(2) === 0) p.name = text(r);
  if (r.int(3) === 0) p.signalWait = text(r);
  return p;
}

describe("the continuing step's pointer, written field by field", () => {
  it("writes encodeStepPointer's bytes for pointers built as a continuing step builds them", () => {
    const r = testRandom("step pointer writer");
    for (let i = 0; i < 300; i++) {
      const p = pointerOf(r);
      const fast = encodeNextStepPointer(p);
      expect(Buffer.from(fast).equals(Buffer.from(encodeStepPointer(p)))).toBe(true);
      // A step no run has (negative, fractional, past 2^53) is written as given and read as damage.
      if (!(Number.isSafeInteger(p.step) && p.step >= 0)) {
        expect(() => decodeStepPointer(fast, "k")).toThrow(StoreCorruptedError);
        continue;
      }
      const back = decodeStepPointer(fast, "k");
      expect(back.step === p.step && back.jobId === p.jobId && back.name === p.name && back.signalWait === p.signalWait).toBe(true);
    }
  });

  it("leaves out undefined fields as the compacted encoding does", () => {
    const p: StepPointer = { step: 3, jobId: "01J", name: undefined, signalWait: undefined };
    expect(Buffer.from(encodeNextStepPointer(p)).equals(Buffer.from(encodeStepPointer({ step: 3, jobId: "01J" })))).toBe(true);
  });

  it("hands a value it does not take to the general encoder, with the same bytes", () => {
    // A runner's untyped step name, a NaN step: not a string or number the writer takes as such.
    const odd: StepPointer[] = [
      { step: 2, jobId: "01J", name: 42 as unknown as string },
      { step: Number.NaN, jobId: "01J" },
      { step: 2, jobId: "01J", signalWait: null as unknown as string },
    ];
    for (const p of odd) expect(Buffer.from(encodeNextStepPointer(p)).equals(Buffer.from(encodeStepPointer(p)))).toBe(true);
  });

  it("answers an array of its own, not a view another write changes", () => {
    const a = encodeNextStepPointer({ step: 1, jobId: "a" });
    const copy = Uint8Array.from(a);
    encodeNextStepPointer({ step: 2, jobId: "bbbbbbbbbbbbbbbbbbbb" });
    expect(a.byteOffset).toBe(0);
    expect(a.byteLength).toBe(a.buffer.byteLength);
    expect(Buffer.from(a).equals(Buffer.from(copy))).toBe(true);
  });
});
