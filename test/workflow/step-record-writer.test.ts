/**
 * @module A settled step's history entry written field by field from its
 * facts (`encodeStepFactsForCommit`): the bytes the record encoder writes
 * for `stepRecordOf` of the same facts, over every field and odd values,
 * so entries stay equal to, and readable by, those written before.
 */
import { describe, expect, it } from "vitest";
import { bytesEqual } from "../../runtime/store/bytes-equal.js";
import { StoreCorruptedError } from "taquba";
import type { CommitOnlyBytes } from "../../runtime/workflow/records/commit-bytes.js";
import {
  decodeStepRecord,
  encodeStepFactsForCommit,
  encodeStepRecord,
  HISTORY_FINAL_PAYLOAD_BYTES,
  HISTORY_NEXT_PAYLOAD_BYTES,
  HISTORY_SIGNAL_PAYLOAD_BYTES,
  runHistoryPrefix,
  type StepFacts,
  stepHistoryKey,
  stepRecordOf,
  writeStepFacts,
} from "../../runtime/workflow/runs/history-records.js";
import type { AttemptHistory, StepAttemptOutcome } from "../../runtime/workflow/runs/run-history.js";
import { type TestRandom, testRandom } from "../support/seed.js";

const COPIES = { copiesCommittedValues: true };
const KEEPS = { copiesCommittedValues: false };
const bytesOf = (b: CommitOnlyBytes): Uint8Array => b as unknown as Uint8Array;

const OUTCOMES: StepAttemptOutcome[] = ["continued", "succeeded", "failed", "cancelled", "retried", "dead_lettered", "put_back", "interrupted"];

function pick<T>(r: TestRandom, list: readonly T[]): T {
  return list[r.int(list.length)]!;
}

/** Text of the length classes MessagePack tells apart (fixstr, str8, str16; str32 below), ASCII or not. */
function text(r: TestRandom): string {
  const n = pick(r, [0, 1, 31, 32, 255, 256, 300, 5000]);
  const kind = r.int(3);
  if (kind === 0) return "k".repeat(n);
  if (kind === 1) return "é☃😀".repeat(Math.ceil(n / 4)).slice(0, n);
  let s = "";
  for (let i = 0; i < Math.min(n, 400); i++) s += String.fromCharCode(0x20 + r.int(0x5f));
  return s;
}

/** Finite numbers of every integer form and float64 (the record holds no NaN). */
function num(r: TestRandom): number {
  return pick(r, [
    0,
    1,
    127,
    128,
    255,
    256,
    65_535,
    65_536,
    2 ** 32 - 1,
    2 ** 32,
    2 ** 40 + 3,
    Number.MAX_SAFE_INTEGER,
    -1,
    -33,
    -129,
    -40_000,
    -(2 ** 31),
    1.5,
    -0.25,
    1e30,
    -0,
  ]);
}

function bytes(r: TestRandom, max: number): Uint8Array | undefined {
  const n = pick(r, [-1, 0, 1, 15, 16, 255, 256, max, max + 1, 65_535, 65_536]);
  if (n < 0) return undefined;
  const b = new Uint8Array(n);
  for (let i = 0; i < Math.min(n, 64); i++) b[i] = r.int(256);
  return b;
}

function attempt(r: TestRandom, n: number): AttemptHistory {
  const a: { -readonly [K in keyof AttemptHistory]: AttemptHistory[K] } = { attempt: n, startedAtMs: num(r), endedAtMs: num(r), outcome: pick(r, OUTCOMES) };
  const e = r.int(4);
  if (e === 1 || e === 3) a.error = text(r);
  if (e === 2 || e === 3) a.stack = text(r);
  return a;
}

function keys(r: TestRandom): string[] {
  const n = pick(r, [0, 0, 1, 3, 16, 50, 51, 70]);
  return Array.from({ length: n }, () => text(r).slice(0, pick(r, [0, 8, 256, 257, 400])));
}

function randomFacts(r: TestRandom): StepFacts {
  const earlier = Array.from({ length: pick(r, [0, 0, 1, 2, 19, 20, 25]) }, (_, i) => attempt(r, i + 1));
  const signal = pick(r, [
    undefined,
    { key: text(r), result: "timed_out" as const },
    { key: text(r), result: "delivered" as const, payloadBytes: num(r) },
    { key: text(r), result: "delivered" as const, payloadBytes: undefined },
  ]);
  const transition = pick(r, [
    undefined,
    { kind: "immediate" as const },
    { kind: "after" as const, delayMs: num(r), runAtMs: num(r) },
    { kind: "on_signal" as const, key: text(r), timeoutMs: num(r), deadlineMs: num(r) },
  ]);
  return {
    step: num(r),
    name: r.int(3) === 0 ? undefined : text(r),
    payloadBytes: num(r),
    earlier,
    current: attempt(r, earlier.length + 1),
    signal,
    transition,
    memoKeys: keys(r),
    kvPuts: keys(r),
    kvDeletes: keys(r),
    payload: bytes(r, HISTORY_FINAL_PAYLOAD_BYTES),
    next: bytes(r, HISTORY_NEXT_PAYLOAD_BYTES),
    signalPayload: bytes(r, HISTORY_SIGNAL_PAYLOAD_BYTES),
  };
}

/** The facts of the common step: a first attempt that continued at once. */
const PLAIN: StepFacts = {
  step: 3,
  name: "charge",
  payloadBytes: 20,
  earlier: [],
  current: { attempt: 1, startedAtMs: 1_700_000_000_000, endedAtMs: 1_700_000_000_004, outcome: "continued" },
  transition: { kind: "immediate" },
  memoKeys: [],
  kvPuts: [],
  kvDeletes: [],
  next: new Uint8Array([1, 2, 3]),
};

function expectSameBytes(f: StepFacts): void {
  const old = encodeStepRecord(stepRecordOf(f));
  expect(bytesEqual(bytesOf(encodeStepFactsForCommit(f, COPIES)), old)).toBe(true);
  expect(bytesEqual(bytesOf(encodeStepFactsForCommit(f, KEEPS)), old)).toBe(true);
}

describe("a step's history entry written field by field", () => {
  it("is the record encoder's bytes over seeded facts of every field and odd value, and reads back", () => {
    const r = testRandom("step record writer");
    let direct = 0;
    for (let i = 0; i < 120; i++) {
      const f = randomFacts(r);
      const old = encodeStepRecord(stepRecordOf(f));
      const written = writeStepFacts(f, i % 2 === 0);
      if (written !== undefined) {
        direct++;
        expect(bytesEqual(written, old), `facts ${i}`).toBe(true);
      }
      expectSameBytes(f);
      // Equal bytes decode alike; the entry reads back with its step, or is damage when a step, size or attempt is no whole number from 0.
      const read = () => decodeStepRecord(bytesOf(encodeStepFactsForCommit(f, COPIES)), "k");
      const rec = stepRecordOf(f);
      const whole = (n: number) => Number.isSafeInteger(n) && n >= 0;
      if (whole(rec.step) && whole(rec.payloadBytes) && rec.attempts.every((a) => whole(a.attempt))) expect(read().step === f.step).toBe(true);
      else expect(read).toThrow(StoreCorruptedError);
    }
    // Every seeded fact is plain data: the direct writer takes them all.
    expect(direct).toBe(120);
  });

  it("writes the common step directly, as a view when the commit copies and an array of its own when it keeps", () => {
    const view = writeStepFacts(PLAIN, true)!;
    const own = writeStepFacts(PLAIN, false)!;
    expect(bytesEqual(view, encodeStepRecord(stepRecordOf(PLAIN)))).toBe(true);
    expect(bytesEqual(own, view)).toBe(true);
    expect(own.byteOffset === 0 && own.buffer.byteLength === own.byteLength).toBe(true);
    expect(view.buffer.byteLength).toBeGreaterThan(view.byteLength);
  });

  it("leaves out empty lists, zero counts, absent fields and payloads past their bounds, as the record does", () => {
    const f: StepFacts = {
      ...PLAIN,
      name: undefined,
      transition: undefined,
      next: new Uint8Array(HISTORY_NEXT_PAYLOAD_BYTES + 1),
      payload: new Uint8Array(HISTORY_FINAL_PAYLOAD_BYTES + 1),
      signalPayload: new Uint8Array(HISTORY_SIGNAL_PAYLOAD_BYTES + 1),
    };
    expectSameBytes(f);
    const back = decodeStepRecord(writeStepFacts(f, false)!, "k");
    expect(Object.keys(back).sort()).toEqual([
      "attempts",
      "attemptsDropped",
      "kvDeletes",
      "kvEffects",
      "kvPuts",
      "memoKeys",
      "memoKeysWritten",
      "payloadBytes",
      "step",
    ]);
  });

  it("bounds the attempts, keys and key lengths as the record does", () => {
    const many = Array.from(
      { length: 30 },
      (_, i): AttemptHistory => ({ attempt: i + 1, startedAtMs: i, endedAtMs: i + 1, outcome: "retried", error: `boom ${i}` }),
    );
    // One error of str32's size, non-ASCII.
    many[29] = { ...many[29]!, error: "é☃😀".repeat(17_500) };
    const f: StepFacts = {
      ...PLAIN,
      earlier: many,
      memoKeys: Array.from({ length: 60 }, (_, i) => `m${i}${"x".repeat(300)}`),
      kvPuts: ["a"],
      kvDeletes: Array.from({ length: 55 }, (_, i) => `d${i}`),
    };
    expectSameBytes(f);
    const back = decodeStepRecord(writeStepFacts(f, false)!, "k");
    expect(back.attempts).toHaveLength(20);
    expect(back.attemptsDropped).toBe(11);
    expect(back.memoKeys).toHaveLength(50);
    expect(back.memoKeys[0]).toHaveLength(256);
    expect(back.memoKeysWritten).toBe(60);
    expect(back.kvEffects).toBe(56);
  });

  it("hands a value it does not write to the record encoder, to the same bytes", () => {
    const odd: StepFacts[] = [
      { ...PLAIN, next: Buffer.from([1, 2, 3]) },
      { ...PLAIN, transition: Object.assign(Object.create({ inherited: 1 }), { kind: "immediate" }) },
      { ...PLAIN, signal: { key: "k", result: "delivered", payloadBytes: 3, hasOwnProperty: 1 } as never },
      { ...PLAIN, current: { ...PLAIN.current, error: null } as never },
    ];
    for (const f of odd) {
      expect(writeStepFacts(f, true)).toBeUndefined();
      expectSameBytes(f);
    }
  });
});

describe("a step's history key", () => {
  it("is the run's prefix and the step in 10 digits, for steps in any order, past the kept ones and odd numbers, sorting by step", () => {
    const steps = [1023, 0, 7, 1024, 5000, 999_999_999, 2 ** 40, 1.5, -1, Number.NaN];
    for (const step of steps) expect(stepHistoryKey("q", "run-1", step)).toBe(`${runHistoryPrefix("q", "run-1")}${String(step).padStart(10, "0")}`);
    expect(stepHistoryKey("q", "r", 9)).toBe("workflow/history/q/r/0000000009");
    const keys = [12, 3, 1024, 1023, 0].map((s) => stepHistoryKey("q", "r", s));
    expect([...keys].sort()).toEqual([0, 3, 12, 1023, 1024].map((s) => stepHistoryKey("q", "r", s)));
  });
});
