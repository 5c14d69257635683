/**
 * @module Deterministic identifiers derived from spec names.
 *
 * Every generated name comes from these functions, so the same spec always
 * yields the same identifiers; two spec names that map to one identifier are
 * reported as a collision rather than silently suffixed.
 */

import { blockCommentText } from "../print/comment-text.js";

function words(name: string): string[] {
  return name.split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0);
}

/** `email.send` -> `emailSend`, `tenant_id` -> `tenantId`. */
export function camelCase(name: string): string {
  return words(name)
    .map((w, i) => (i === 0 ? w.charAt(0).toLowerCase() + w.slice(1) : w.charAt(0).toUpperCase() + w.slice(1)))
    .join("");
}

/** `email.send` -> `EmailSend`. */
export function pascalCase(name: string): string {
  return words(name)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
}

/** `email.send` -> `email-send`, for file names. */
export function kebabCase(name: string): string {
  return words(name)
    .map((w) => w.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase())
    .join("-");
}

/** A property key as TypeScript source: bare when possible, else a JSON string. */
export function propertyKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

/** Code-unit order, independent of locale (never `localeCompare`). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Text safe inside a `/** ... *\/` comment (see comment-text.ts). */
export function docText(text: string): string {
  return blockCommentText(text).trim();
}

/** A JSDoc block for `text` at `indent` spaces: one line when it fits, else one line per source line. */
export function jsDoc(text: string, indent = ""): string {
  const lines = docText(text).split(/\r?\n/);
  if (lines.length === 1) return `${indent}/** ${lines[0]} */`;
  return [`${indent}/**`, ...lines.map((l) => (l === "" ? `${indent} *` : `${indent} * ${l}`)), `${indent} */`].join("\n");
}
