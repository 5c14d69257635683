/**
 * @module JSON Schema (the spec's subset) to TypeScript type text.
 *
 * A pure function of the schema: properties are sorted in code-unit order,
 * descriptions become JSDoc, and `$ref`s become the named types emitted for
 * `types:` entries. Anything the subset cannot express precisely (formats,
 * bounds, patterns) is left to the run-time validators.
 */

import { compareCodeUnits, jsDoc, propertyKey } from "./names.js";
import type { JsonSchema, JsonValue } from "../analyse/spec-model.js";

const REF_PREFIX = "#/types/";

/** A property of an object type, as the emitter needs it for interfaces. */
export interface PropertyType {
  readonly name: string;
  readonly type: string;
  readonly optional: boolean;
  readonly description: string | undefined;
}

function literal(v: JsonValue): string {
  return v === null || typeof v !== "object" ? JSON.stringify(v) : "unknown";
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  if (unique.includes("unknown")) return "unknown";
  return unique.length === 0 ? "never" : unique.join(" | ");
}

function wrap(t: string): string {
  return /[|&]/.test(t) && !/^\{[\s\S]*\}$/.test(t) ? `(${t})` : t;
}

/** The properties of an object schema, sorted, with their types at `indent` levels. */
export function objectProperties(schema: JsonSchema, indent: number): PropertyType[] {
  const props = (schema["properties"] ?? {}) as Record<string, JsonSchema>;
  const required = new Set(Array.isArray(schema["required"]) ? (schema["required"] as string[]) : []);
  return Object.keys(props)
    .sort(compareCodeUnits)
    .map((name) => {
      const s = props[name] as JsonSchema;
      return {
        name,
        type: schemaToType(s, indent),
        optional: !required.has(name),
        description: typeof s["description"] === "string" ? s["description"] : undefined,
      };
    });
}

/** The index signature type of an object schema, or undefined when it is closed. */
export function indexSignature(schema: JsonSchema, indent: number): string | undefined {
  const extra = schema["additionalProperties"];
  const hasProps = schema["properties"] !== undefined;
  if (extra === false) return undefined;
  if (extra === undefined || extra === true) return "unknown";
  // Declared properties must fit the index type, so a typed index beside properties widens to unknown.
  return hasProps ? "unknown" : schemaToType(extra as JsonSchema, indent);
}

function objectType(schema: JsonSchema, indent: number): string {
  const pad = "  ".repeat(indent + 1);
  const lines: string[] = [];
  for (const p of objectProperties(schema, indent + 1)) {
    if (p.description !== undefined) lines.push(jsDoc(p.description, pad));
    lines.push(`${pad}${propertyKey(p.name)}${p.optional ? "?" : ""}: ${p.type};`);
  }
  const index = indexSignature(schema, indent + 1);
  if (index !== undefined) lines.push(`${pad}[key: string]: ${index};`);
  if (lines.length === 0) return schema["additionalProperties"] === false ? "Record<string, never>" : "{}";
  return `{\n${lines.join("\n")}\n${"  ".repeat(indent)}}`;
}

function typeFor(name: string, schema: JsonSchema, indent: number): string {
  switch (name) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array": {
      const items = schema["items"];
      const item = items === undefined ? "unknown" : schemaToType(items as JsonSchema, indent);
      return /[\s|&]/.test(item) ? `Array<${item}>` : `${item}[]`;
    }
    case "object":
      return objectType(schema, indent);
    default:
      return "unknown";
  }
}

/** The TypeScript type of values a schema admits; nested objects are indented `indent` levels. */
export function schemaToType(schema: JsonSchema, indent = 0): string {
  const ref = schema["$ref"];
  if (typeof ref === "string") return ref.slice(REF_PREFIX.length);
  if ("const" in schema) return literal(schema["const"] as JsonValue);
  if (Array.isArray(schema["enum"])) return union((schema["enum"] as JsonValue[]).map(literal));
  const alternatives = (schema["oneOf"] ?? schema["anyOf"]) as JsonSchema[] | undefined;
  const parts: string[] = [];
  const t = schema["type"];
  if (typeof t === "string") parts.push(typeFor(t, schema, indent));
  else if (Array.isArray(t)) parts.push(union((t as string[]).map((x) => typeFor(x, schema, indent))));
  else if (schema["properties"] !== undefined) parts.push(objectType(schema, indent));
  if (alternatives !== undefined) parts.push(union(alternatives.map((a) => wrap(schemaToType(a, indent)))));
  if (Array.isArray(schema["allOf"])) {
    parts.push(...(schema["allOf"] as JsonSchema[]).map((a) => wrap(schemaToType(a, indent))));
  }
  if (parts.length === 0) return "unknown";
  return parts.length === 1 ? (parts[0] as string) : parts.map(wrap).join(" & ");
}
