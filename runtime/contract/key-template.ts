/**
 * @module Key templates: the idempotency and correlation keys a spec
 * declares, such as `payment:{order_id}`, parsed once here for the runtime
 * (which fills them from a job's input or a signal's payload) and for the
 * generator (which checks the fields they name). Pure.
 */
import { ValidationError } from "../errors.js";

const PLACEHOLDER = /\{([^{}]*)\}/g;

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

/**
 * Compiles a key template such as `payment:{order_id}` or `{customer.id}`
 * into a function of the values it names. Strings are percent-encoded so
 * that a value holding the template's separators cannot collide with
 * another key; numbers and booleans are written as JSON writes them.
 */
export function compileKeyTemplate(template: string): (values: unknown) => string {
  const parts = parseKeyTemplate(template);
  return (values: unknown): string =>
    parts
      .map((p) => {
        if (typeof p === "string") return p;
        let v: unknown = values;
        for (const seg of p) v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[seg] : undefined;
        if (typeof v === "string") return encodeURIComponent(v);
        if (typeof v === "number" || typeof v === "boolean") return String(v);
        throw new ValidationError(`key template "${template}" needs a string, number or boolean at "${p.join(".")}"`, [
          `${p.join(".")}: is ${v === null ? "null" : typeof v}`,
        ]);
      })
      .join("");
}
