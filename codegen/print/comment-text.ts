/**
 * @module Spec text made inert inside generated comments.
 *
 * Descriptions, key templates and the spec's own path end up in comments of
 * generated files. A line terminator (LF, CR, U+2028, U+2029) ends a `//`
 * comment and `*\/` ends a block comment, after which the rest of the text
 * would be code run on import. These functions escape what could end the
 * comment, and every other control character, as `\uXXXX`.
 */

const hex = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** Text safe inside a `// ...` comment: one line, no control characters. */
export function lineCommentText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this function's job.
  return text.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/g, hex);
}

/**
 * Text safe inside a `/** ... *\/` comment: `*\/` broken up, line breaks
 * normalised to LF (the only one kept), other control characters escaped.
 */
export function blockCommentText(text: string): string {
  return (
    text
      .replace(/\r\n/g, "\n")
      // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this function's job.
      .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, hex)
      .replace(/\*\//g, "*\\/")
  );
}
