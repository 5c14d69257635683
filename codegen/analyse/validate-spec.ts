/**
 * @module Stage 2: check a parsed spec against the spec format's JSON Schema.
 *
 * Each ajv error is mapped from its JSON pointer to the line and column of
 * the offending key or value, and reworded to say how to fix it.
 */

import { createRequire } from "node:module";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import type { Diagnostic } from "./diagnostics.js";
import type { LoadedSpec } from "./load-spec.js";
import { jsonSchemaFormats } from "../../runtime/contract/json-schema-formats.js";

const require = createRequire(import.meta.url);

let compiled: ValidateFunction | undefined;

/**
 * The spec format's JSON Schema, as shipped in `schemas/`, loaded as a
 * module the way the other stages load ajv and ts-morph: no file access of
 * its own. From the sources it is two folders up, from `dist/` three.
 */
export function specMetaSchema(): Record<string, unknown> {
  for (const candidate of ["../../schemas/taquba-spec.schema.json", "../../../schemas/taquba-spec.schema.json"]) {
    try {
      return require(candidate) as Record<string, unknown>;
    } catch (e) {
      if ((e as { code?: unknown }).code !== "MODULE_NOT_FOUND") throw e;
    }
  }
  throw new Error("schemas/taquba-spec.schema.json is missing from the installation; reinstall taquba");
}

function metaValidator(): ValidateFunction {
  if (compiled === undefined) {
    const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, formats: { ...jsonSchemaFormats } });
    compiled = ajv.compile(specMetaSchema());
  }
  return compiled;
}

function pointerSegments(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** `jobs["email.send"].input`: dotted where segments are identifiers, bracketed where not. */
function showPath(path: readonly string[]): string {
  return path
    .map((s, i) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s) ? `${i === 0 ? "" : "."}${s}` : /^\d+$/.test(s) ? `[${s}]` : `[${JSON.stringify(s)}]`))
    .join("");
}

function describe(e: ErrorObject, all: readonly ErrorObject[]): { path: string[]; at: "key" | "value"; message: string } {
  const path = pointerSegments(e.instancePath);
  const where = path.length === 0 ? "the spec" : showPath(path);
  switch (e.keyword) {
    case "additionalProperties": {
      const key = String(e.params["additionalProperty"]);
      const props = (e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties;
      const allowed = props === undefined ? "" : `; allowed keys here: ${Object.keys(props).sort().join(", ")}`;
      return { path: [...path, key], at: "key", message: `unknown key "${key}" in ${where}${allowed}` };
    }
    case "required":
      return {
        path,
        at: "key",
        message: `${where} lacks the required key "${String(e.params["missingProperty"])}"; add it`,
      };
    case "propertyNames": {
      const name = String(e.params["propertyName"]);
      // The name's own failure (usually a pattern) says what form is expected.
      const inner = all.find((x) => x !== e && x.propertyName === name && x.instancePath === e.instancePath && x.keyword === "pattern");
      const form = inner === undefined ? "" : ` (names here must match ${String(inner.params["pattern"])})`;
      return { path: [...path, name], at: "key", message: `the name "${name}" is not allowed in ${where}${form}; rename it` };
    }
    case "enum":
      return {
        path,
        at: "value",
        message: `${where} must be one of ${((e.params["allowedValues"] as unknown[]) ?? []).map((v) => JSON.stringify(v)).join(", ")}`,
      };
    case "const":
      return { path, at: "value", message: `${where} must be ${JSON.stringify(e.params["allowedValue"])}` };
    case "pattern":
      return {
        path,
        at: "value",
        message: `${where} is not in the expected form (pattern ${String(e.params["pattern"])}); ${
          typeof (e.parentSchema as { description?: unknown } | undefined)?.description === "string"
            ? String((e.parentSchema as { description: string }).description)
            : "change the value"
        }`,
      };
    default:
      return { path, at: "value", message: `${where} ${e.message ?? "is invalid"}; fix this value` };
  }
}

/** Validates a loaded spec against the meta-schema. Empty when it conforms. */
export function validateSpec(spec: LoadedSpec): Diagnostic[] {
  if (spec.value === undefined) return [];
  const validate = metaValidator();
  if (validate(spec.value)) return [];
  const errors = validate.errors ?? [];
  // A failed anyOf repeats each branch's error; errors under propertyNames
  // repeat the name check. Report what the user must change, once per place.
  const propertyNameErrors = new Set(errors.filter((e) => e.keyword === "propertyNames").map((e) => `${e.instancePath}`));
  const seen = new Set<string>();
  const out: Diagnostic[] = [];
  for (const e of errors) {
    if (e.keyword === "anyOf") continue;
    if (e.keyword !== "propertyNames" && e.propertyName !== undefined) continue;
    if (e.keyword === "pattern" && propertyNameErrors.has(e.instancePath) && e.propertyName !== undefined) continue;
    const d = describe(e, errors);
    const dedupe = `${d.path.join("/")}|${d.at}`;
    if (seen.has(dedupe)) continue;
    seen.add(dedupe);
    const p = spec.locator.locate(d.path, d.at);
    out.push({ code: "SPEC_SCHEMA", severity: "error", file: spec.file, line: p.line, column: p.column, message: d.message });
  }
  return out;
}
