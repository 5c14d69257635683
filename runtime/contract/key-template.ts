/**
 * @module Key templates: `payment:{order_id}` into an injective function of
 * the values it names.
 *
 * Signal correlation keys and job idempotency keys come from templates, and
 * two different parameter tuples must never give the same key (a signal
 * would reach another run's waiter; two jobs would share an idempotency
 * key). So:
 * - strings are percent-encoded as `encodeURIComponent` does, and the
 *   characters it leaves alone (`- . _ ~ ! * ' ( )`) are escaped too when
 *   the template uses them between two parameters;
 * - numbers and booleans are tagged with `#` (which no encoded string holds),
 *   so the number 1 and the string "1" differ;
 * - the literal text between two parameters must hold a separator, a
 *   character no encoded value holds (anything but letters, digits, `%` and
 *   `#`), so where one value ends is never ambiguous.
 */

import { ValidationError } from "../errors.js";

const PLACEHOLDER = /\{([^{}]*)\}/g;
/** Characters an encoded value may hold, so they cannot separate two parameters. */
const VALUE_CHARS = /^[A-Za-z0-9%#]*$/;
/** What encodeURIComponent leaves unescaped besides letters and digits. */
const UNRESERVED_MARKS = /[-._~!*'()]/g;

/** The literal texts and field paths of a template, alternating: literal, field, literal, ..., literal. */
export interface ParsedKeyTemplate {
  readonly literals: readonly string[];
  readonly fields: readonly string[];
}

/** Splits a template into its literal texts and the (dotted) fields it interpolates. */
export function parseKeyTemplate(template: string): ParsedKeyTemplate {
  const literals: string[] = [];
  const fields: string[] = [];
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    literals.push(template.slice(last, m.index));
    fields.push(m[1] ?? "");
    last = m.index + m[0].length;
  }
  literals.push(template.slice(last));
  return { literals, fields };
}

/**
 * Why a template cannot build unambiguous keys, or undefined when it can:
 * two parameters with no separator between them (`{a}{b}`, `{a}x{b}`).
 */
export function keyTemplateProblem(template: string): string | undefined {
  const { literals, fields } = parseKeyTemplate(template);
  for (let i = 1; i < fields.length; i++) {
    const between = literals[i] ?? "";
    if (VALUE_CHARS.test(between)) {
      return `{${fields[i - 1]}} and {${fields[i]}} have ${between === "" ? "nothing" : `only "${between}"`} between them, so two different values could give the same key; put a separator such as ":" or "/" between them`;
    }
  }
  return undefined;
}

function escapeMarks(text: string, marks: ReadonlySet<string>): string {
  return marks.size === 0 ? text : text.replace(UNRESERVED_MARKS, (c) => (marks.has(c) ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}` : c));
}

/**
 * Compiles a key template such as `payment:{order_id}` or `{customer.id}`
 * into a function of the values it names. Throws `ValidationError` when the
 * template has two parameters without a separator between them; the
 * function throws `ValidationError` when a named value is missing or is not
 * a string, finite number or boolean.
 */
export function compileKeyTemplate(template: string): (values: unknown) => string {
  const problem = keyTemplateProblem(template);
  if (problem !== undefined) throw new ValidationError(`key template "${template}" is ambiguous`, [problem]);
  const { literals, fields } = parseKeyTemplate(template);
  // Marks used between parameters are escaped in values, so a value never contains its neighbour's separator.
  const marks = new Set(literals.slice(1, -1).join("").match(UNRESERVED_MARKS) ?? []);
  const paths = fields.map((f) => f.split("."));
  return (values: unknown): string => {
    let out = literals[0] ?? "";
    paths.forEach((path, i) => {
      let v: unknown = values;
      // Own properties only: a field named "constructor" must not read Object.prototype.
      for (const seg of path) v = typeof v === "object" && v !== null && Object.hasOwn(v, seg) ? (v as Record<string, unknown>)[seg] : undefined;
      if (typeof v === "string") out += escapeMarks(encodeURIComponent(v), marks);
      else if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean") out += `#${escapeMarks(encodeURIComponent(String(v)), marks)}`;
      else {
        throw new ValidationError(`key template "${template}" needs a string, finite number or boolean at "${path.join(".")}"`, [
          `${path.join(".")}: is ${v === null ? "null" : typeof v === "number" ? String(v) : typeof v}`,
        ]);
      }
      out += literals[i + 1] ?? "";
    });
    return out;
  };
}
