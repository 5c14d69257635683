/**
 * @module Keeping secrets out of error messages.
 *
 * Error messages end up in logs, dead-letter records and dashboards, read
 * by people who should not see credentials. URLs are the usual carriers:
 * userinfo (`s3://KEY:SECRET@bucket`), query values (`?token=...`) and path
 * segments that are themselves the secret (Slack and Discord webhook URLs).
 * These functions keep a URL recognisable (scheme, host, the shape of the
 * path) while replacing those parts with `***`.
 */

import { codePointCut } from "./option-values.js";

const MASK = "***";

/**
 * Whether a path segment looks like a credential rather than a name: long
 * and mixing letters with digits, or very long. `services`, `v1`, `orders`
 * and short ids stay readable.
 */
export function looksLikeToken(segment: string): boolean {
  if (segment.length >= 32) return true;
  return segment.length >= 16 && /^[A-Za-z0-9_\-.~=+%]+$/.test(segment) && /[0-9]/.test(segment) && /[A-Za-z]/.test(segment);
}

function redactParsed(url: URL): string {
  const userinfo = url.username !== "" || url.password !== "" ? `${MASK}@` : "";
  const path = url.pathname
    .split("/")
    .map((s) => (looksLikeToken(s) ? MASK : s))
    .join("/");
  const query = url.search === "" ? "" : `?${[...url.searchParams.keys()].map((k) => `${encodeURIComponent(k)}=${MASK}`).join("&")}`;
  const hash = url.hash === "" ? "" : `#${MASK}`;
  const host = url.host === "" ? "" : `//${userinfo}${url.host}`;
  return `${url.protocol}${host || (url.href.startsWith(`${url.protocol}//`) ? "//" : "")}${path}${query}${hash}`;
}

/**
 * A URL fit for an error message: userinfo, query values, fragments and
 * token-like path segments replaced by `***`. Text that does not parse as
 * a URL gets the same treatment by pattern.
 *
 * @example
 * redactUrl("https://hooks.slack.com/services/T0001/B0001/Xy12Ab34Cd56Ef78Gh90Ij12?x=1");
 * // "https://hooks.slack.com/services/T0001/B0001/***?x=***"
 */
export function redactUrl(url: string | URL): string {
  if (url instanceof URL) return redactParsed(url);
  try {
    return redactParsed(new URL(url));
  } catch {
    return url
      .replace(/\/\/[^/?#\s]*@/g, `//${MASK}@`)
      .replace(/([?&][^=&#\s]*)=[^&#\s]*/g, `$1=${MASK}`)
      .replace(/[A-Za-z0-9_\-.~=+%]{16,}/g, (s) => (looksLikeToken(s) ? MASK : s));
  }
}

/** Every URL inside free text redacted (see {@link redactUrl}), and other long token-like words masked. */
export function redactSecretsIn(text: string): string {
  return text
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, (u) => redactUrl(u))
    .replace(/[A-Za-z0-9_\-+/=]{32,}/g, (s) => (looksLikeToken(s) && !s.includes(MASK) ? MASK : s));
}

/**
 * Text from outside (a receiver's response body) made fit to store as an
 * error: control characters and runs of white space become one space,
 * secrets are redacted, and the result holds at most `max` characters.
 */
export function safeExcerpt(text: string, max = 200): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this flattens.
  const flat = redactSecretsIn(text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\s]+/g, " ").trim());
  // Cut at a character boundary: half an emoji would be stored as U+FFFD.
  return flat.length <= max ? flat : `${flat.slice(0, codePointCut(flat, max))}...`;
}

/**
 * What went wrong parsing JSON, without quoting the input: V8's messages
 * include the start of the payload, which may be someone's personal data.
 */
export function jsonErrorText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (/end of JSON input|Unterminated/i.test(message)) return "the JSON ends too early";
  const position = /at position (\d+)/.exec(message);
  return position === null ? "the text is not valid JSON" : `the text is not valid JSON (at position ${position[1]})`;
}
