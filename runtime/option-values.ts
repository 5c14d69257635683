/**
 * @module Option objects as callers hand them over: each field read once
 * (a getter or a Proxy answering differently on a second read cannot slip
 * past a check), and values shown in error messages for what they are.
 */

/** A value as an error message shows it: what it is, not only how `String` spells it ("100" and 100 differ). */
export function describeValue(v: unknown): string {
  if (typeof v === "string") return `${JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}...` : v)} (a string)`;
  if (typeof v === "bigint") return `${v}n (a bigint)`;
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : String(v);
  if (typeof v === "function") return "a function";
  if (typeof v === "symbol") return "a symbol";
  if (v === null || typeof v !== "object") return String(v);
  try {
    return Array.isArray(v) ? "an array" : "an object";
  } catch {
    // Array.isArray throws for a revoked Proxy and nothing else.
    return "a revoked Proxy";
  }
}

/** Whether `v` is an object that is not an array: a revoked Proxy, which throws at any question, is not. */
export function isOptionObject(v: unknown): v is object {
  if (v === null || typeof v !== "object") return false;
  try {
    return !Array.isArray(v);
  } catch {
    return false;
  }
}

/**
 * What a caller's thrown value says, for a message; never throws itself (an
 * object without a prototype has no text, an error's message may be a getter
 * that throws, a revoked Proxy throws at `instanceof`).
 */
export function errorText(err: unknown): string {
  try {
    return err instanceof Error ? String(err.message) : String(err);
  } catch {
    return "a value that cannot be shown as text";
  }
}

/**
 * Reads each named field of `from` once into a plain object: a getter or a
 * Proxy is asked once, so what is checked is what is used, and one that
 * throws becomes a problem naming the field instead of escaping.
 */
export function readFields<K extends string>(from: object, keys: readonly K[], path: string, problems: string[]): Partial<Record<K, unknown>> {
  const out: Partial<Record<K, unknown>> = {};
  for (const k of keys) {
    let v: unknown;
    try {
      v = (from as Record<string, unknown>)[k];
    } catch (err) {
      problems.push(`reading ${path}${k} threw: ${errorText(err)}`);
      continue;
    }
    if (v !== undefined) out[k] = v;
  }
  return out;
}
