/**
 * @module Canonical JSON: the one serialisation used for hashing and for
 * comparing schemas, independent of the key order of the YAML.
 */

import { compareCodeUnits } from "../emit/names.js";
import type { JsonValue } from "../analyse/spec-model.js";

/** JSON with object keys sorted in code-unit order at every level. */
export function canonicalJson(value: unknown): string {
  const walk = (v: unknown): JsonValue => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== "object" || v === null) return v as JsonValue;
    const out: Record<string, JsonValue> = {};
    for (const k of Object.keys(v).sort(compareCodeUnits)) {
      const child = (v as Record<string, unknown>)[k];
      if (child !== undefined) out[k] = walk(child);
    }
    return out;
  };
  return JSON.stringify(walk(value));
}
