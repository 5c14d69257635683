/**
 * @module Whether a run's outcome is kept in its terminal record is decided
 * by its encoding's size against `INLINE_OUTCOME_MAX_BYTES`; an outcome
 * whose largest possible encoding is within the bound is not encoded to be
 * measured. The decision is the exact encoding's for outcomes at and around
 * the bound, with text of one to four UTF-8 bytes a character and lone
 * surrogates, in headers, results, public errors, codes and error texts.
 */
import { describe, expect, it } from "vitest";
import { INLINE_OUTCOME_MAX_BYTES, inlineOutcomeOf } from "../../runtime/workflow/runs/inline-outcome.js";
import { encodeInlineOutcome, type InlineOutcome } from "../../runtime/workflow/records/records.js";
import { utf8 } from "../../runtime/workflow/records/codec.js";
import type { RunOutcome } from "../../runtime/workflow/runs/run-types.js";
import type { RunId } from "../../runtime/workflow/runs/run-id.js";

/** The decision by the exact encoding, as it was made before the bound. */
function exactlyInline(o: RunOutcome): boolean {
  const inline: InlineOutcome = { headers: { ...o.headers } };
  if (o.result !== undefined) inline.result = o.result;
  if (o.publicError !== undefined) inline.publicError = o.publicError;
  if (o.errorCode !== undefined) inline.errorCode = o.errorCode;
  const errorBytes = o.error === undefined ? 0 : utf8(o.error).byteLength;
  return encodeInlineOutcome(inline).byteLength + errorBytes <= INLINE_OUTCOME_MAX_BYTES;
}

const UNITS = ["a", "é", "€", "😀", "\ud800"];

describe("an outcome kept inline", () => {
  it("is decided as its exact encoding decides, at and around the bound", () => {
    let inline = 0;
    let over = 0;
    for (const unit of UNITS) {
      for (let chars = 0; chars <= INLINE_OUTCOME_MAX_BYTES + 8; chars += unit.length === 2 ? 2 : 1) {
        const text = unit.repeat(Math.max(0, Math.floor(chars / unit.length)));
        const shapes: RunOutcome[] = [
          { runId: "r" as RunId, status: "succeeded", finalStep: 0, headers: { h: text } },
          { runId: "r" as RunId, status: "succeeded", finalStep: 0, headers: { [text || "k"]: "v" }, result: new Uint8Array(chars) },
          { runId: "r" as RunId, status: "failed", finalStep: 3, headers: {}, error: text, errorKind: "runner" },
          { runId: "r" as RunId, status: "failed", finalStep: 3, headers: { a: "b" }, error: "e", publicError: text, errorCode: text.slice(0, 64) },
          {
            runId: "r" as RunId,
            status: "succeeded",
            finalStep: 1,
            headers: { x: text.slice(0, chars >> 1) },
            result: new Uint8Array(Math.max(0, INLINE_OUTCOME_MAX_BYTES - chars)),
          },
        ];
        for (const o of shapes) {
          const exact = exactlyInline(o);
          expect(inlineOutcomeOf(o) !== undefined, `${JSON.stringify(unit)} x ${chars}`).toBe(exact);
          if (exact) inline++;
          else over++;
        }
      }
    }
    // Both sides of the bound were reached.
    expect(inline).toBeGreaterThan(100);
    expect(over).toBeGreaterThan(100);
  });
});
