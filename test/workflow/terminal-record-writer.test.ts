/**
 * @module The terminal record written field by field
 * (`terminalRecordForCommit`): the bytes `encodeTerminalRecord` writes for
 * the same record, built as the terminating settlement builds it, over
 * every optional field, string and integer class and odd value, so records
 * stay equal to, and readable by, those written before; and under a
 * polluted `Object.prototype`, no field the record lacks is written.
 */
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "../../runtime/errors.js";
import type { CommitOnlyBytes } from "../../runtime/workflow/records/commit-bytes.js";
import {
  decodeTerminalRecord,
  encodeTerminalRecord,
  type InlineOutcome,
  type TerminalRecord,
  terminalRecordForCommit,
} from "../../runtime/workflow/records/records.js";
import { withPolluted } from "../support/polluted-prototype.js";
import { type TestRandom, testRandom } from "../support/seed.js";

/** A record as a test builds it: run ids as plain strings. */
const record = (o: object) => o as TerminalRecord;
const bytesOf = (b: CommitOnlyBytes) => Buffer.from(b as unknown as Uint8Array);

function pick<T>(r: TestRandom, list: readonly T[]): T {
  return list[r.int(list.length)]!;
}

/** Text of each MessagePack string class (fixstr, str8, str16, str32), ASCII or not. */
function text(r: TestRandom): string {
  const n = pick(r, [0, 1, 31, 32, 255, 256, 65_535, 65_536]);
  return r.int(2) === 0 ? "t".repeat(n) : "é☃😀".repeat(Math.ceil(n / 4));
}

const NUMBERS = [0, 1, 127, 128, 65_536, 2 ** 32, 1_700_000_000_000, 2 ** 53 - 1, -1, 1.5];

/** A record with its fields set in `addTerminalEffects`'s order, each optional one present or not. */
function recordOf(r: TestRandom): TerminalRecord {
  const t: Record<string, unknown> = {
    runId: text(r),
    status: pick(r, ["succeeded", "failed", "cancelled"] as const),
    finalStep: pick(r, NUMBERS),
    terminatedAtMs: pick(r, NUMBERS),
    incarnation: text(r),
    token: text(r),
    memoPrefix: text(r),
    submittedAtMs: pick(r, NUMBERS),
  };
  if (r.int(2) === 0) t.submission = text(r);
  if (r.int(2) === 0) t.error = text(r);
  if (r.int(2) === 0) t.errorKind = pick(r, ["runner", "cancelled", "superseded"] as const);
  if (r.int(3) === 0) t.supersededBy = text(r);
  if (r.int(2) === 0) {
    const inline: InlineOutcome = { headers: r.int(2) === 0 ? {} : { a: text(r), "x-b": "1" } };
    if (r.int(2) === 0) inline.result = new Uint8Array(pick(r, [0, 1, 300])).fill(7);
    if (r.int(3) === 0) inline.publicError = text(r);
    if (r.int(3) === 0) inline.errorCode = "E_X";
    t.inline = inline;
  }
  return record(t);
}

describe("the terminal record, written field by field", () => {
  it("writes encodeTerminalRecord's bytes for records built as the terminating settlement builds them", () => {
    const r = testRandom("terminal record writer");
    for (let i = 0; i < 300; i++) {
      const t = recordOf(r);
      const want = Buffer.from(encodeTerminalRecord(t));
      expect(bytesOf(terminalRecordForCommit(t, {})).equals(want)).toBe(true);
      expect(bytesOf(terminalRecordForCommit(t, { copiesCommittedValues: true })).equals(want)).toBe(true);
      // A final step that is no step index, or a time below 0, is written alike and read back as damage (see run-record-ranges.test.ts).
      const inRange = Number.isSafeInteger(t.finalStep) && t.finalStep >= 0 && t.terminatedAtMs >= 0 && (t.submittedAtMs ?? 0) >= 0;
      if (inRange) expect(decodeTerminalRecord(want, "k")).toEqual(t);
      else expect(() => decodeTerminalRecord(want, "k")).toThrow(StoreCorruptedError);
    }
  });

  it("hands a value it does not take to the general encoder, with the same bytes", () => {
    const base = record({
      runId: "r",
      status: "failed",
      finalStep: 2,
      terminatedAtMs: 5,
      incarnation: "j",
      token: "j:1",
      memoPrefix: "m",
      submittedAtMs: 1,
    });
    const odd: TerminalRecord[] = [
      { ...base, error: null as unknown as string },
      { ...base, finalStep: Number.NaN },
      { ...base, inline: Object.assign(Object.create({ inherited: 1 }) as object, { headers: {} }) as TerminalRecord["inline"] },
      { ...base, error: undefined, supersededBy: undefined },
    ];
    for (const t of odd) expect(bytesOf(terminalRecordForCommit(t, {})).equals(Buffer.from(encodeTerminalRecord(t)))).toBe(true);
  });

  it("writes no field the record lacks while Object.prototype holds one of that name", () => {
    const t = record({
      runId: "r",
      status: "succeeded",
      finalStep: 0,
      terminatedAtMs: 5,
      incarnation: "j",
      token: "j:1",
      memoPrefix: "m",
      submittedAtMs: 1,
    });
    const polluted = { error: "from the prototype", supersededBy: "other", inline: { headers: {} } };
    const bytes = withPolluted(polluted, () => Buffer.from(bytesOf(terminalRecordForCommit(t, {}))));
    expect(bytes.equals(Buffer.from(encodeTerminalRecord(t)))).toBe(true);
    const back = decodeTerminalRecord(bytes, "k");
    expect(Object.hasOwn(back, "error") || Object.hasOwn(back, "supersededBy") || Object.hasOwn(back, "inline")).toBe(false);
  });
});
