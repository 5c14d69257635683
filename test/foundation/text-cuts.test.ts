/**
 * @module The texts messages and logs cut to a bound (a refused name quoted
 * in an error, a caller's error text, a logged error's message): never
 * between the two halves of a surrogate pair, whose half left alone would
 * show as an escape (`\ud83d`) of a character the caller never wrote, or as
 * U+FFFD once stored. A lone surrogate the caller did write stays visible.
 */
import { describe, expect, it } from "vitest";
import { boundText } from "../../runtime/logger.js";
import { codePointCut, cutText, quoteValue } from "../../runtime/option-values.js";
import { safeExcerpt } from "../../runtime/redact.js";

/** Whether `s` has no lone surrogate (`String.prototype.isWellFormed`, past this project's lib target). */
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

const MIXED = "ok 😀 a𝄞b 🇯🇵 c𠀋 é";
const ASTRAL = "😀𝄞𠀋🇯🇵".repeat(3);
const TEXTS = [MIXED, ASTRAL, `${"n".repeat(63)}😀😀`, `${"n".repeat(64)}😀`];

/** Every position from before the start to past the end of `text`. */
function positions(text: string): number[] {
  return Array.from({ length: text.length + 3 }, (_, i) => i - 1);
}

describe("cuts at a character boundary", () => {
  it("codePointCut moves back one where a pair would split, and only there", () => {
    for (const text of TEXTS) {
      for (const end of positions(text)) {
        const at = codePointCut(text, end);
        const clamped = Math.max(0, Math.min(end, text.length));
        expect(at === clamped || at === clamped - 1, `end ${end}`).toBe(true);
        expect(isWellFormed(text.slice(0, at)), `end ${end}`).toBe(true);
      }
    }
    for (const [end, at] of [
      [Number.NaN, 0],
      [-1e30, 0],
      [Number.POSITIVE_INFINITY, MIXED.length],
      [1e30, MIXED.length],
      [4.5, 3],
      [5.9, 5],
    ] as const)
      expect(codePointCut(MIXED, end), `end ${end}`).toBe(at);
    // A lone surrogate the text has is no pair: the cut stays where asked.
    expect(codePointCut("a\ud800b", 2)).toBe(2);
    expect(codePointCut("a\udc00\ud800", 2)).toBe(2);
  });

  it("cutText, at every bound, keeps well-formed text and says how much it kept", () => {
    for (const text of TEXTS) {
      for (let max = 0; max <= text.length + 1; max++) {
        const cut = cutText(text, max);
        if (text.length <= max) {
          expect(cut).toBe(text);
          continue;
        }
        const [kept, marker] = cut.split("… [cut: ");
        expect(text.startsWith(kept!)).toBe(true);
        expect(isWellFormed(kept!)).toBe(true);
        expect(marker).toBe(`first ${kept!.length} of ${text.length} characters kept]`);
      }
    }
  });

  it("quoteValue shows a long name's first characters without half a pair", () => {
    for (const text of TEXTS) {
      const quoted = quoteValue(`${text}${"z".repeat(64)}`);
      expect(quoted).not.toMatch(/\\ud[89ab]/);
      expect(isWellFormed(JSON.parse(quoted) as string)).toBe(true);
    }
    // A lone surrogate the name has stays visible as its escape.
    expect(quoteValue("a\ud800")).toBe('"a\\ud800"');
  });

  it("boundText (a logged error's fields) cuts at every bound without escaping half a pair", () => {
    for (const text of TEXTS) {
      for (let max = 0; max <= text.length; max++) {
        const bounded = boundText(text, max);
        expect(bounded, `max ${max}`).not.toMatch(/\\ud[89a-f]/);
        const kept = bounded.split("… (")[0]!;
        expect(text.startsWith(kept)).toBe(true);
        if (text.length > max) expect(bounded.endsWith(`(${text.length - kept.length} more characters)`)).toBe(true);
      }
    }
    expect(boundText("x\ud800", 5)).toBe("x\\ud800");
  });

  it("safeExcerpt (a receiver's response body) cuts at every bound without half a pair", () => {
    for (const text of [...TEXTS, `${"ab ".repeat(66)}😀😀 ${"🇯🇵".repeat(4)}`]) {
      const whole = safeExcerpt(text, Number.POSITIVE_INFINITY);
      for (let max = 0; max <= whole.length + 1; max++) {
        const excerpt = safeExcerpt(text, max);
        if (whole.length <= max) {
          expect(excerpt).toBe(whole);
          continue;
        }
        expect(excerpt.endsWith("..."), `max ${max}`).toBe(true);
        const kept = excerpt.slice(0, -3);
        expect(whole.startsWith(kept), `max ${max}`).toBe(true);
        expect(isWellFormed(kept), `max ${max}`).toBe(true);
        expect(kept.length === max || kept.length === max - 1, `max ${max}`).toBe(true);
      }
    }
  });
});
