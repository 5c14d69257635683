/**
 * @module Key templates: the idempotency and correlation keys a spec
 * declares, such as `payment:{order_id}`, parsed once here for the runtime
 * (which fills them from a job's input or a signal's payload) and for the
 * generator (which checks the fields they name). Pure.
 *
 * Two different parameter tuples must never give the same key (a signal
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
import { describeValue, errorText, quoteValue } from "../option-values.js";

const PLACEHOLDER = /\{([^{}]*)\}/g;
/** Characters an encoded value may hold, so they cannot separate two parameters. */
const VALUE_CHARS = /^[A-Za-z0-9%#]*$/;
/** What encodeURIComponent leaves unescaped besides letters and digits. */
const UNRESERVED_MARKS = /[-._~!*'()]/g;

/**
 * Splits a key template into its literal text (strings) and its
 * placeholders (the dotted path each names, split at the dots), in order.
 */
export function parseKeyTemplate(template: string): Array<string | readonly string[]> {
  const parts: Array<string | readonly string[]> = [];
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    parts.push(template.slice(last, m.index));
    parts.push((m[1] ?? "").split("."));
    last = m.index + m[0].length;
  }
  parts.push(template.slice(last));
  return parts;
}

/** The dotted paths a key template interpolates, in order (`payment:{order.id}` -> `["order.id"]`). */
export function templateFields(template: string): string[] {
  return parseKeyTemplate(template).flatMap((p) => (typeof p === "string" ? [] : [p.join(".")]));
}

/** The literal texts of a template: before the first placeholder, between each two, after the last. */
function literalsOf(parts: ReadonlyArray<string | readonly string[]>): string[] {
  return parts.filter((p): p is string => typeof p === "string");
}

/**
 * Why a template cannot build unambiguous keys, or undefined when it can:
 * two parameters with no separator between them (`{a}{b}`, `{a}x{b}`).
 */
export function keyTemplateProblem(template: string): string | undefined {
  const literals = literalsOf(parseKeyTemplate(template));
  const fields = templateFields(template);
  for (let i = 1; i < fields.length; i++) {
    const between = literals[i] ?? "";
    if (VALUE_CHARS.test(between)) {
      return `{${fields[i - 1]}} and {${fields[i]}} have ${between === "" ? "nothing" : `only "${between}"`} between them, so two different values could give the same key; put a separator such as ":" or "/" between them`;
    }
  }
  return undefined;
}

function escapeMarks(text: string, marks: ReadonlySet<string>): string {
  return marks.size === 0
    ? text
    : text.replace(UNRESERVED_MARKS, (c) => (marks.has(c) ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}` : c));
}

/**
 * Compiles a key template such as `payment:{order_id}` or `{customer.id}`
 * into a function of the values it names. Throws `ValidationError` when the
 * template has two parameters without a separator between them; the
 * function throws `ValidationError` when a named value is missing or is not
 * a string, finite number or boolean.
 */
export function compileKeyTemplate(template: string): (values: unknown) => string {
  if (typeof template !== "string") throw new ValidationError(`a key template must be a string, got ${describeValue(template)}`);
  const problem = keyTemplateProblem(template);
  if (problem !== undefined) throw new ValidationError(`key template ${quoteValue(template)} is ambiguous`, [problem]);
  const parts = parseKeyTemplate(template);
  const literals = literalsOf(parts);
  // Marks used between parameters are escaped in values, so a value never contains its neighbour's separator.
  const marks = new Set(literals.slice(1, -1).join("").match(UNRESERVED_MARKS) ?? []);
  return (values: unknown): string =>
    parts
      .map((p) => {
        if (typeof p === "string") return p;
        let v: unknown = values;
        // Own properties only: a field named "constructor" must not read Object.prototype.
        try {
          for (const seg of p) v = typeof v === "object" && v !== null && Object.hasOwn(v, seg) ? (v as Record<string, unknown>)[seg] : undefined;
        } catch (err) {
          // A getter that throws, or a revoked Proxy.
          throw new ValidationError(`key template ${quoteValue(template)} could not read "${p.join(".")}": ${errorText(err)}`);
        }
        if (typeof v === "string") return escapeMarks(encodeURIComponent(v), marks);
        if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean") return `#${escapeMarks(encodeURIComponent(String(v)), marks)}`;
        throw new ValidationError(`key template "${template}" needs a string, finite number or boolean at "${p.join(".")}"`, [
          `${p.join(".")}: is ${v === null ? "null" : typeof v === "number" ? String(v) : typeof v}`,
        ]);
      })
      .join("");
}
