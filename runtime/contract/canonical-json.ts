/**
 * @module Canonical JSON: object keys sorted at every level, so equal values
 * give equal bytes. Job payloads, step envelopes, job results and notices
 * are written in it, so input checks compare values, not key order. Pure.
 */
import { TaqubaError, ValidationError } from "../errors.js";
import { errorText } from "../option-values.js";

/** JSON with object keys sorted at every level; `undefined` at the top is `null`. Rejects what JSON cannot hold. */
export function canonicalJson(value: unknown, path = ""): string {
  try {
    return walk(value, path);
  } catch (err) {
    if (err instanceof TaqubaError) throw err;
    // A getter that throws, a revoked Proxy, a cycle (the stack runs out): a caller's value, refused as such.
    throw new ValidationError(`${path || "the value"} cannot be written as JSON: ${errorText(err)}`);
  }
}

function walk(value: unknown, path: string): string {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new ValidationError(`${path || "the value"} is ${value}, which JSON cannot hold`);
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map((v, i) => walk(v === undefined ? null : v, `${path}/${i}`)).join(",")}]`;
      const keys = Object.keys(value)
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${walk((value as Record<string, unknown>)[k], `${path}/${k}`)}`).join(",")}}`;
    }
    default:
      throw new ValidationError(`${path || "the value"} is a ${typeof value}, which JSON cannot hold`);
  }
}
