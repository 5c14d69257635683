/**
 * @module A child's error texts cut to travel with its end to the parent:
 * cut at a character boundary, never between the halves of a surrogate
 * pair (an emoji), whose half alone the payload's UTF-8 cannot hold and
 * the parent would read as U+FFFD, a character the child never wrote.
 */
import { describe, expect, it } from "vitest";
import { decodeChildEnd, encodeChildEnd } from "../../runtime/workflow/children/child-end.js";
import type { RunId } from "../../runtime/workflow/runs/run-id.js";

/** The bound `encodeChildEnd` cuts error texts to (child-end.ts). */
const MAX_INLINE_ERROR_CHARS = 8192;
const SOURCE = { token: "t1", memoPrefix: "m/" };
const ASTRALS = ["😀", "𝄞", "𠀋", "🇯🇵"];

/** Whether `s` has no lone surrogate (`String.prototype.isWellFormed`, past this project's lib target). */
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

function roundTrip(text: string) {
  const bytes = encodeChildEnd(
    { runId: "child-1" as RunId, status: "failed", finalStep: 2, error: text, publicError: text, errorCode: text, headers: {} },
    SOURCE,
  );
  return decodeChildEnd(bytes, "the test's signal");
}

describe("a child's end cuts its error texts at a character boundary", () => {
  it("with an astral character at every position around the bound", () => {
    for (const astral of ASTRALS) {
      // The bound falls before, inside, and after a pair, for each shift of the text against it.
      for (let lead = MAX_INLINE_ERROR_CHARS - 6; lead <= MAX_INLINE_ERROR_CHARS + 1; lead++) {
        const text = `${"e".repeat(lead)}${astral.repeat(4)}`;
        const end = roundTrip(text);
        for (const got of [end.error, end.publicError, end.errorCode]) {
          const shown = `lead ${lead}, ${astral}`;
          expect(got, shown).toBeDefined();
          expect(got!.endsWith("..."), shown).toBe(true);
          const kept = got!.slice(0, -3);
          expect(isWellFormed(kept), shown).toBe(true);
          expect(text.startsWith(kept), shown).toBe(true);
          expect(kept.length === MAX_INLINE_ERROR_CHARS || kept.length === MAX_INLINE_ERROR_CHARS - 1, shown).toBe(true);
        }
        expect(end.errorOmitted, `lead ${lead}`).toBe(true);
      }
    }
  });

  it("keeps a text at the bound whole, an astral character last", () => {
    for (const astral of ["😀", "🇯🇵"]) {
      const text = `${"e".repeat(MAX_INLINE_ERROR_CHARS - astral.length)}${astral}`;
      const end = roundTrip(text);
      expect(end.error).toBe(text);
      expect(end.errorOmitted).toBeUndefined();
    }
  });
});
