/**
 * @module Spec `pattern`s that cannot stall the event loop.
 *
 * JavaScript regular expressions backtrack, so a pattern like `^(a+)+$`
 * takes time exponential in the input on a near-miss: 30 characters block
 * the process for seconds. Two rules, checked on the pattern's syntax tree
 * (parsed by @eslint-community/regexpp, the parser ESLint uses):
 * - no repetition nested inside an unbounded repetition (`(a+)+`,
 *   `(a|b{1,3})*`), the shape behind exponential backtracking;
 * - no backreferences (`(a)\1`), which no linear-time engine supports.
 * What stays (say `\d+\d+$`) can still be polynomial, so the generated
 * validators also cap the length of strings a pattern is tested against
 * (see {@link boundPattern}).
 */

import { RegExpParser, visitRegExpAST, type AST } from "@eslint-community/regexpp";

/** Strings longer than this fail a `pattern` without being tested, unless the schema's maxLength says otherwise. */
export const PATTERN_INPUT_LIMIT = 10_000;

/** Whether a quantifier repeats a variable number of times, more than once. */
function repeats(q: AST.Quantifier): boolean {
  return q.max > 1 && q.max !== q.min;
}

/**
 * Why `pattern` (as ajv compiles it, with the `u` flag) could backtrack
 * catastrophically, or undefined when it passes both rules. A pattern that
 * does not parse is left to the meta-schema's `regex` format check.
 */
export function patternProblem(pattern: string): string | undefined {
  let ast: AST.Pattern;
  try {
    ast = new RegExpParser({ ecmaVersion: 2025 }).parsePattern(pattern, 0, pattern.length, { unicode: true });
  } catch {
    return undefined;
  }
  let problem: string | undefined;
  visitRegExpAST(ast, {
    onBackreferenceEnter(node) {
      problem ??= `the backreference ${node.raw} can take exponential time to match; rewrite the pattern without it`;
    },
    onQuantifierEnter(node) {
      if (problem !== undefined || node.max !== Infinity) return;
      visitRegExpAST(node.element, {
        onQuantifierEnter(inner) {
          if (problem === undefined && repeats(inner)) {
            problem = `"${inner.raw}" repeats inside "${node.raw}", which can take exponential time on input that almost matches; rewrite it without nested repetition (e.g. "(a+)+" as "a+")`;
          }
        },
      });
    },
  });
  return problem;
}

/**
 * `pattern` rewritten so it is never tested against a string longer than
 * `limit`; otherwise it searches exactly as before (the lazy prefix tries
 * every start position, as an unanchored search does). A longer string
 * fails at once, or, with `overLimit: "pass"` (the limit is the schema's
 * own maxLength, which already fails it), passes at once so the error list
 * names maxLength alone.
 */
export function boundPattern(pattern: string, limit: number, overLimit: "fail" | "pass" = "fail"): string {
  const tooLong = `[\\s\\S]{${limit + 1}}`;
  const bounded = `(?!${tooLong})[\\s\\S]*?(?:${pattern})`;
  return overLimit === "pass" ? `^(?:${tooLong}|${bounded})` : `^${bounded}`;
}
