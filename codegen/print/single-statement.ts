/**
 * @module Whether a printed text is exactly one top-level TypeScript
 * statement, decided by a conservative scan instead of a parser, so the
 * structure printer can trust its own output without loading ts-morph.
 */

/** ts-morph's notion of whitespace (char codes), which differs from `\s` and `trim()`. */
export const WHITESPACE: ReadonlySet<number> = new Set([" ", "\f", "\n", "\r", "\t", "\v", "\u00A0", "\u2028", "\u2029"].map((c) => c.charCodeAt(0)));

const BLOCK_DECLARATION = /^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+|async\s+|const\s+)?(?:function|interface|class|enum|namespace|module)\b/;
/** A top-level line ending in one of these continues on the next line. */
const CONTINUES_AFTER = new Set(["=", ",", "(", "[", "{", "<", "|", "&", ":", "?", "."]);
/** A top-level line starting with one of these continues the previous one. */
const CONTINUES_BEFORE = new Set(["|", "&", ".", "?", ":", "=", ">", ")", "]", "}", ","]);
/** What may follow a `}` that closes to the top level, on the same line, in a statement that goes on. */
const AFTER_CLOSE = /^(?:[;,)\]}|&.?:=>[]|as\s|satisfies\s)/;

function isSpace(c: string): boolean {
  return WHITESPACE.has(c.charCodeAt(0)) || c === "\ufeff";
}

/**
 * Whether `text` is exactly one top-level statement that a TypeScript
 * parser would give back, trimmed, as this very text: optional JSDoc
 * comments, then code with balanced brackets whose only top-level end is
 * at the end, no other comment at the top level, and every top-level line
 * break inside an unfinished expression (so automatic semicolon insertion
 * cannot split it). Conservative: "no" only costs a slower print.
 */
export function singleStatement(text: string): boolean {
  const t = text.trim();
  let i = 0;
  // Leading JSDoc blocks stay attached to the statement; any other leading comment would become a statement of its own.
  for (;;) {
    while (i < t.length && isSpace(t[i] as string)) i++;
    if (!t.startsWith("/*", i)) break;
    if (!t.startsWith("/**", i) || t.startsWith("/**/", i)) return false;
    const end = t.indexOf("*/", i + 3);
    if (end < 0) return false;
    i = end + 2;
  }
  if (i >= t.length || t.startsWith("//", i)) return false;
  const block = BLOCK_DECLARATION.test(t.slice(i, i + 60));
  let depth = 0;
  let lastCode = "";
  let beforeLast = "";
  const code = (c: string) => {
    beforeLast = lastCode;
    lastCode = c;
  };
  for (; i < t.length; i++) {
    const c = t[i] as string;
    if (c === '"' || c === "'") {
      for (i++; i < t.length && t[i] !== c; i++) {
        if (t[i] === "\\") i++;
        else if (t[i] === "\n" || t[i] === "\r") return false;
      }
      if (i >= t.length) return false;
      code(c);
      continue;
    }
    if (c === "`") return false;
    if (c === "/") {
      // Top-level comments would move to a neighbouring statement; a lone slash may start a regular expression.
      if (depth === 0) return false;
      if (t[i + 1] === "/") {
        const nl = t.indexOf("\n", i);
        if (nl < 0) return false;
        i = nl - 1;
        continue;
      }
      if (t[i + 1] === "*") {
        const end = t.indexOf("*/", i + 2);
        if (end < 0) return false;
        i = end + 1;
        continue;
      }
      return false;
    }
    if (c === "\n" || c === "\r" || c === "\u2028" || c === "\u2029") {
      if (depth > 0) continue;
      let j = i + 1;
      while (j < t.length && isSpace(t[j] as string)) j++;
      const arrow = lastCode === ">" && beforeLast === "=";
      if (!CONTINUES_AFTER.has(lastCode) && !arrow && !CONTINUES_BEFORE.has(t[j] ?? "")) return false;
      continue;
    }
    if (isSpace(c)) continue;
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      depth--;
      if (depth < 0) return false;
      if (depth === 0 && c === "}") {
        if (block && i !== t.length - 1) return false;
        const rest = t.slice(i + 1, i + 12).replace(/^[ \t]+/, "");
        if (rest !== "" && !rest.startsWith("\n") && !AFTER_CLOSE.test(rest)) return false;
      }
    } else if (c === ";" && depth === 0 && i !== t.length - 1) return false;
    code(c);
  }
  return depth === 0;
}
