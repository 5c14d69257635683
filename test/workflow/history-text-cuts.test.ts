/**
 * @module A run's history keeps its texts (error texts, stacks, memo and KV
 * keys) within bounds by cutting them. A cut between the two halves of a
 * surrogate pair (an emoji, an astral character) would leave half a
 * character, which UTF-8 cannot hold: the stored entry would read back
 * ending in U+FFFD. Checked at every cut position, through the record's
 * encoder and decoder.
 */
import { describe, expect, it } from "vitest";
import {
  attemptFromQueue,
  cutHistoryText,
  decodeStepRecord,
  encodeStepFactsForCommit,
  encodeStepRecord,
  errorFieldsOf,
  stepRecordOf,
  type StepFacts,
} from "../../runtime/workflow/runs/history-records.js";
import { HISTORY_ERROR_CHARS, HISTORY_STACK_CHARS } from "../../runtime/workflow/runs/run-history.js";

/** Whether `s` has no lone surrogate (`String.prototype.isWellFormed`, past this project's lib target). */
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

const MIXED = "ok 😀 a𝄞b 🇯🇵 c𠀋 é";
const ASTRAL = "😀𝄞𠀋🇯🇵".repeat(3);

/** Checks that `cut` is `text` cut to at most `max` characters, at a character boundary, keeping as much as it can. */
function expectCutAt(text: string, max: number, cut: string): void {
  if (text.length <= max) {
    expect(cut).toBe(text);
    return;
  }
  expect(cut.endsWith("…")).toBe(true);
  const kept = cut.slice(0, -1);
  expect(text.startsWith(kept), `max ${max}`).toBe(true);
  expect(isWellFormed(kept), `max ${max}: ${JSON.stringify(kept)}`).toBe(true);
  expect(cut.length).toBeLessThanOrEqual(max);
  // One character less only where the last one kept would have been half a pair.
  expect(kept.length, `max ${max}`).toBeGreaterThanOrEqual(max - 2);
}

describe("history texts cut to their bounds", () => {
  it("are cut at a character boundary at every position, in mixed and all-astral text", () => {
    for (const text of [MIXED, ASTRAL]) {
      for (let max = 1; max <= text.length + 1; max++) expectCutAt(text, max, cutHistoryText(text, max));
    }
  });

  it("keep lone surrogates the text already had as they are, and cut a text of one pair to the marker alone", () => {
    expect(cutHistoryText("😀", 1)).toBe("…");
    expect(cutHistoryText("😀x", 2)).toBe("…");
    expect(cutHistoryText("\ud800abc", 3)).toBe("\ud800a…");
  });

  it("a failed attempt's error and stack, past their bounds, read back from the stored entry without U+FFFD", () => {
    for (const shift of [0, 1, 2, 3]) {
      // The pair straddles each bound at one of the shifts.
      const error = `${"e".repeat(HISTORY_ERROR_CHARS - 3 + shift)}${ASTRAL}`;
      const stack = `${"s".repeat(HISTORY_STACK_CHARS - 3 + shift)}${ASTRAL}`;
      const failed = Object.assign(new Error(error), { stack });
      const fields = errorFieldsOf(failed, error);
      const facts: StepFacts = {
        step: 1,
        payloadBytes: 0,
        earlier: [attemptFromQueue({ attempt: 1, outcome: "retried", recordedAt: 5, error, errorStack: stack } as never)],
        current: { attempt: 2, startedAtMs: 6, endedAtMs: 7, outcome: "failed", ...fields },
        memoKeys: [`${"m".repeat(254 + (shift % 2))}${ASTRAL}`],
        kvPuts: [ASTRAL.repeat(30)],
        kvDeletes: [],
      };
      // The record's encoder and the field-by-field writer a settlement uses (its bytes are the record's).
      const written = encodeStepFactsForCommit(facts, { copiesCommittedValues: false }) as unknown as Uint8Array;
      for (const bytes of [encodeStepRecord(stepRecordOf(facts)), written]) {
        const back = decodeStepRecord(bytes, "k");
        const texts = [...back.attempts.flatMap((a) => [a.error ?? "", a.stack ?? ""]), ...back.memoKeys, ...back.kvPuts];
        for (const t of texts) expect(t.includes("\ufffd"), `shift ${shift}: ${t.slice(-8)}`).toBe(false);
        expect(back.attempts[0]!.error!.length).toBeLessThanOrEqual(HISTORY_ERROR_CHARS);
        expect(back.attempts[1]!.stack!.length).toBeLessThanOrEqual(HISTORY_STACK_CHARS);
      }
    }
  });
});
