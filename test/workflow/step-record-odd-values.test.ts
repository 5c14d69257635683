/**
 * @module Odd values through a step's history entry written field by field
 * (`encodeStepFactsForCommit`): numbers past every integer form, NaN and
 * the infinities, lone surrogates, keys cut inside a surrogate pair, huge
 * texts and payloads at their bounds, transitions and signals of unusual
 * shapes (getters, proxies, frozen, symbol and integer keys, nested values,
 * other byte views). Each is the general encoder's bytes, or fails the same
 * way it does; nothing is written the general way would not write.
 */
import { describe, expect, it } from "vitest";
import { bytesEqual } from "../../runtime/store/bytes-equal.js";
import type { CommitOnlyBytes } from "../../runtime/workflow/records/commit-bytes.js";
import {
  encodeStepFactsForCommit,
  encodeStepRecord,
  HISTORY_FINAL_PAYLOAD_BYTES,
  HISTORY_NEXT_PAYLOAD_BYTES,
  HISTORY_SIGNAL_PAYLOAD_BYTES,
  type StepFacts,
  stepRecordOf,
} from "../../runtime/workflow/runs/history-records.js";

const PLAIN: StepFacts = {
  step: 3,
  name: "charge",
  payloadBytes: 20,
  earlier: [],
  current: { attempt: 1, startedAtMs: 1, endedAtMs: 4, outcome: "continued" },
  transition: { kind: "immediate" },
  memoKeys: [],
  kvPuts: [],
  kvDeletes: [],
  next: new Uint8Array([1, 2, 3]),
};

const withTransition = (t: object): StepFacts => ({ ...PLAIN, transition: t as StepFacts["transition"] });
const withCurrent = (c: object): StepFacts => ({ ...PLAIN, current: { ...PLAIN.current, ...c } as StepFacts["current"] });

const CASES: [string, StepFacts][] = [
  ["a NaN step", { ...PLAIN, step: Number.NaN }],
  ["-0 as the step", { ...PLAIN, step: -0 }],
  ["2^64 as the step", { ...PLAIN, step: 2 ** 64 }],
  ["-2^63 as the step", { ...PLAIN, step: -(2 ** 63) }],
  ["-2^64 as the step", { ...PLAIN, step: -(2 ** 64) }],
  ["the smallest subnormal as the step", { ...PLAIN, step: 5e-324 }],
  ["Infinity payload bytes", { ...PLAIN, payloadBytes: Number.POSITIVE_INFINITY }],
  ["a NaN attempt", withCurrent({ attempt: Number.NaN })],
  ["a start of -Infinity", withCurrent({ startedAtMs: Number.NEGATIVE_INFINITY })],
  ["a NaN delay and a run time of 1e308", withTransition({ kind: "after", delayMs: Number.NaN, runAtMs: 1e308 })],
  ["a name with a lone high surrogate", { ...PLAIN, name: "a\uD800b" }],
  ["a name of a lone low surrogate", { ...PLAIN, name: "\uDC00" }],
  ["an empty name", { ...PLAIN, name: "" }],
  ["a name of 70,000 characters (str32)", { ...PLAIN, name: "n".repeat(70_000) }],
  ["a memo key cut inside a surrogate pair", { ...PLAIN, memoKeys: [`${"x".repeat(255)}😀y`] }],
  ["a KV key of 300 lone surrogates", { ...PLAIN, kvPuts: ["\uD800".repeat(300)] }],
  ["an empty KV delete key", { ...PLAIN, kvDeletes: [""] }],
  ["an error and stack of lone surrogates", withCurrent({ error: "\uDFFF", stack: "\uD800" })],
  ["a stack without an error", withCurrent({ stack: "s" })],
  ["an error of 70,000 ASCII characters", withCurrent({ error: "e".repeat(70_000) })],
  [
    "payloads exactly at their bounds",
    {
      ...PLAIN,
      payload: new Uint8Array(HISTORY_FINAL_PAYLOAD_BYTES).fill(7),
      next: new Uint8Array(HISTORY_NEXT_PAYLOAD_BYTES),
      signalPayload: new Uint8Array(HISTORY_SIGNAL_PAYLOAD_BYTES),
    },
  ],
  ["empty payloads", { ...PLAIN, payload: new Uint8Array(0), next: new Uint8Array(0), signalPayload: new Uint8Array(0) }],
  ["a payload that is a view into a larger buffer", { ...PLAIN, payload: new Uint8Array(100).fill(3).subarray(10, 20) }],
  ["a payload that is a Buffer", { ...PLAIN, payload: Buffer.from([1, 2]) }],
  ["a payload that is a Uint8ClampedArray", { ...PLAIN, payload: new Uint8ClampedArray(3) as unknown as Uint8Array }],
  ["a signal with an undefined field", { ...PLAIN, signal: { key: "k", result: "delivered", payloadBytes: undefined } }],
  ["a transition with a null field", withTransition({ kind: "after", delayMs: null, runAtMs: 1 })],
  ["a transition with nested values", withTransition({ kind: "after", extra: { a: undefined, b: [1, undefined] } })],
  ["a transition with a nested null-prototype object", withTransition({ kind: "after", extra: Object.create(null) })],
  ["a frozen transition", withTransition(Object.freeze({ kind: "immediate" }))],
  ["a transition with an enumerable getter", withTransition(Object.defineProperty({ kind: "immediate" }, "g", { get: () => 5, enumerable: true }))],
  ["a transition with a hidden field", withTransition(Object.defineProperty({ kind: "immediate" }, "g", { value: 5, enumerable: false }))],
  ["a transition with a symbol key", withTransition({ kind: "immediate", [Symbol("s")]: 1 })],
  ["a transition with integer keys", withTransition({ kind: "immediate", 2: "b", 1: "a" })],
  ["a transition holding a Date", withTransition({ kind: "after", at: new Date(0) })],
  ["a transition holding bytes", withTransition({ kind: "after", at: new Uint8Array([1]) })],
  ["a transition holding a Buffer", withTransition({ kind: "after", at: Buffer.from([1]) })],
  ["a transition holding a boolean", withTransition({ kind: "after", at: true })],
  ["a transition holding a function", withTransition({ kind: "after", at: () => 1 })],
  ["a transition behind a Proxy", withTransition(new Proxy({ kind: "immediate" }, {}))],
  ["a transition of a null prototype", withTransition(Object.assign(Object.create(null), { kind: "immediate" }))],
  ["a transition holding a bigint", withTransition({ kind: "after", delayMs: 5n })],
  // A hole made without a sparse literal.
  ["a memo key list with a hole", { ...PLAIN, memoKeys: Object.assign(new Array<string>(2), { 1: "a" }) }],
  ["a memo key that is a number", { ...PLAIN, memoKeys: [5] as unknown as string[] }],
  ["an outcome that is a number", withCurrent({ outcome: 5 })],
];

/** The bytes `encode` gives, or the message it throws. */
function outcome(encode: () => Uint8Array | CommitOnlyBytes): Uint8Array | string {
  try {
    return encode() as Uint8Array;
  } catch (err) {
    return `throws ${(err as Error).message}`;
  }
}

describe("a step's history entry written field by field, odd values", () => {
  it.each(CASES)("%s: the general encoder's bytes, or its failure", (_, facts) => {
    const general = outcome(() => encodeStepRecord(stepRecordOf(facts)));
    for (const copiesCommittedValues of [true, false]) {
      const direct = outcome(() => encodeStepFactsForCommit(facts, { copiesCommittedValues }));
      if (typeof general === "string" || typeof direct === "string") expect(direct).toEqual(general);
      else expect(bytesEqual(direct, general), `copies committed values: ${copiesCommittedValues}`).toBe(true);
    }
  });
});
