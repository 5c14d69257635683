/**
 * @module Precompiles a package's schemas into one standalone validator module.
 *
 * ajv's standalone output still `require`s a few of ajv's runtime helpers
 * (string length, deep equality, format functions), even as ESM. Those
 * references are rewritten to `validatorRuntime` from "taquba/generated", which
 * implements the same helpers, so generated code depends on nothing else and
 * loads the same under Node, bundlers and ESM. Schemas are added in sorted
 * order, so the function numbering (and thus every byte) is stable.
 */

import { createRequire } from "node:module";
import { _, Ajv } from "ajv";
import { jsonSchemaFormats } from "../../runtime/contract/json-schema-formats.js";
import { canonicalJson } from "../contract/canonical-json.js";
import { compareCodeUnits } from "./names.js";
import type { JsonSchema, JsonValue, PackageModel } from "../analyse/spec-model.js";
import { boundPattern, PATTERN_INPUT_LIMIT } from "../analyse/pattern-safety.js";

/** One schema to precompile, exported from the module as `exportName`. */
export interface ValidatorRoot {
  readonly exportName: string;
  readonly schema: JsonSchema;
}

// A CommonJS module whose default export TypeScript and Node see differently; require sidesteps the interop.
const standaloneCode = createRequire(import.meta.url)("ajv/dist/standalone/index.js") as (ajv: Ajv, refs: Record<string, string>) => string;

const TYPES_PREFIX = "#/types/";

/** Rewrites `#/types/X` references to `#/definitions/X` and collects the names reached. */
function rewriteRefs(value: JsonValue, reached: Set<string>, pkg: PackageModel): JsonValue {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v as JsonValue, reached, pkg));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === "$ref" && typeof v === "string" && v.startsWith(TYPES_PREFIX)) {
      const name = v.slice(TYPES_PREFIX.length);
      out[k] = `#/definitions/${name}`;
      if (!reached.has(name)) {
        reached.add(name);
        const t = pkg.types.find((x) => x.name === name);
        if (t !== undefined) rewriteRefs(t.schema, reached, pkg);
      }
    } else if (k === "const" || k === "enum" || k === "default" || k === "examples") {
      out[k] = v;
    } else {
      out[k] = rewriteRefs(v, reached, pkg);
    }
  }
  return out;
}

/** A root schema made self-contained: the shared types it reaches become its `definitions`. */
export function selfContained(schema: JsonSchema, pkg: PackageModel): JsonSchema {
  const reached = new Set<string>();
  const root = rewriteRefs(schema, reached, pkg) as Record<string, JsonValue>;
  if (reached.size === 0) return root;
  const definitions: Record<string, JsonValue> = {};
  for (const name of [...reached].sort(compareCodeUnits)) {
    const t = pkg.types.find((x) => x.name === name);
    if (t !== undefined) definitions[name] = rewriteRefs(t.schema, new Set(reached), pkg);
  }
  return { ...root, definitions };
}

const SHARED_ID = "taquba:types";

/** Bounded pattern -> the spec's pattern, so error messages can name the one the user wrote. */
const boundedPatterns = new Map<string, string>();

/** A string as ajv's generated code spells it. */
const codeString = (s: string) =>
  JSON.stringify(s)
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");

/** Error objects in ajv's output name the spec's pattern, not its bounded form (the RegExp keeps the bound). */
function originalPatternsInErrors(code: string): string {
  for (const [bounded, original] of boundedPatterns) {
    const b = codeString(bounded);
    const o = codeString(original);
    code = code
      .split(`params:{pattern: ${b}}`)
      .join(`params:{pattern: ${o}}`)
      .split(`"must match pattern \\""+${b}+"\\""`)
      .join(`"must match pattern \\""+${o}+"\\""`);
  }
  return code;
}

/**
 * Points `#/types/X` references at the shared types schema, and bounds every
 * `pattern` to the schema's maxLength or PATTERN_INPUT_LIMIT, so a validator
 * never runs a pattern over an unbounded string (ajv's allErrors mode tests
 * the pattern even when maxLength already failed).
 */
function sharedRefs(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map((v) => sharedRefs(v as JsonValue));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === "$ref" && typeof v === "string" && v.startsWith(TYPES_PREFIX)) {
      out[k] = `${SHARED_ID}#/definitions/${v.slice(TYPES_PREFIX.length)}`;
    } else if (k === "pattern" && typeof v === "string") {
      const max = (value as { readonly [key: string]: JsonValue })["maxLength"];
      const ownMax = typeof max === "number" && Number.isSafeInteger(max) && max >= 0;
      const bounded = ownMax ? boundPattern(v, max, "pass") : boundPattern(v, PATTERN_INPUT_LIMIT);
      boundedPatterns.set(bounded, v);
      out[k] = bounded;
    } else if (k === "const" || k === "enum" || k === "default" || k === "examples") out[k] = v;
    else out[k] = sharedRefs(v);
  }
  return out;
}

const HELPERS: ReadonlyMap<string, string> = new Map([
  ['require("ajv/dist/runtime/ucs2length").default', "validatorRuntime.ucs2length"],
  ['require("ajv/dist/runtime/equal").default', "validatorRuntime.equal"],
  ['require("taquba").validatorRuntime.formats', "validatorRuntime.formats"],
]);
// All helper references, rewritten in one pass over the (multi-megabyte) module text.
const HELPER_PATTERN = new RegExp([...HELPERS.keys()].map((h) => h.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g");

/** One compiled form of every validator: ajv's module text, its exports as `validateN` bindings, and the aliases. */
interface CompiledForm {
  /** The module's code with its export statements taken out. */
  readonly body: string;
  /** Export name -> the function ajv compiled for it, in ajv's order. */
  readonly exports: ReadonlyArray<readonly [string, string]>;
}

/** An export statement of ajv's standalone ESM output: on a line of its own (`lines: true`). */
const EXPORT_LINE = /^export const (\w+) = (\w+);\n/gm;

/**
 * Compiles the roots with ajv, `ownProperties` as given, into one form's
 * code (see `compileValidators`). `aliases` collects, from the first form
 * compiled, the names whose schema another name already compiled.
 */
function compileForm(roots: readonly ValidatorRoot[], pkg: PackageModel, ownProperties: boolean, aliases: string[] | undefined): CompiledForm {
  // The schemas added below. Their compiled functions are never called here, only their source text is
  // kept, so ajv is handed a stub body to evaluate instead of parsing each function's code with
  // `new Function` (about a tenth of compile time). The source text, and so every output byte, is
  // unchanged; meta-schemas, whose validators ajv does call, are evaluated as usual.
  const ours = new Set<unknown>();
  const ajv = new Ajv({
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
    logger: false,
    ownProperties,
    // No option that rewrites data (defaults, coercion, removal): validators only judge.
    code: {
      source: true,
      esm: true,
      lines: true,
      formats: _`require("taquba").validatorRuntime.formats`,
      process: (code, env) => (env !== undefined && ours.has(env.root.schema) ? "return function validate() {}" : code),
    },
  });
  // Plain functions, as the run-time table holds them: ajv then calls `formats[name](value)`.
  for (const [name, fn] of Object.entries(jsonSchemaFormats)) ajv.addFormat(name, fn);
  // Shared types are compiled once, as one schema the roots reference, rather than inlined into every root.
  if (pkg.types.length > 0) {
    const definitions: Record<string, JsonValue> = {};
    for (const t of pkg.types) definitions[t.name] = sharedRefs(t.schema);
    const shared = { $id: SHARED_ID, definitions };
    ours.add(shared);
    ajv.addSchema(shared);
  }
  const sorted = [...roots].sort((a, b) => compareCodeUnits(a.exportName, b.exportName));
  const mapping: Record<string, string> = {};
  // Identical schemas (a shared error shape, `{ type: object }` outputs) compile once; later names alias the first.
  const firstBySchema = new Map<string, string>();
  for (const r of sorted) {
    const schema = sharedRefs(r.schema);
    const key = canonicalJson(schema);
    const first = firstBySchema.get(key);
    if (first !== undefined) {
      aliases?.push(`export const ${r.exportName} = ${first};`);
      continue;
    }
    firstBySchema.set(key, r.exportName);
    ours.add(schema);
    ajv.addSchema(schema as object, r.exportName);
    mapping[r.exportName] = r.exportName;
  }
  let code = standaloneCode(ajv, mapping);
  code = code.replace(HELPER_PATTERN, (m) => HELPERS.get(m) ?? m);
  code = originalPatternsInErrors(code);
  const leftover = /require\([^)]*\)/.exec(code);
  if (leftover !== null) throw new Error(`ajv standalone output references ${leftover[0]}, which the generator cannot map`);
  code = code.replace(/^"use strict";\n?/, "");
  const exports: Array<readonly [string, string]> = [];
  const body = `${code.trimEnd()}\n`.replace(EXPORT_LINE, (_m, name: string, fn: string) => {
    exports.push([name, fn]);
    return "";
  });
  if (exports.length !== Object.keys(mapping).length || /^export /m.test(body)) {
    throw new Error("ajv standalone output exports its validators in a form the generator does not take apart");
  }
  return { body: body.replace(/^\n+/, ""), exports };
}

/** A compiled form as a block of the module: its code in a function of its own, returning its validators by name. */
function formBlock(name: string, form: CompiledForm): string {
  const fields = form.exports.map(([exportName, fn]) => `  ${exportName}: ${fn},`).join("\n");
  return `const ${name} = (() => {\n${form.body}\nreturn {\n${fields}\n};\n})();`;
}

/**
 * What chooses a form per call (see `compileValidators`). A `for...in` over
 * `Object.prototype` that finds no field costs a few nanoseconds, as V8
 * keeps the (empty) list of its enumerable fields.
 */
const CHOOSER = `/** Whether Object.prototype holds an enumerable field (a library's merge of a parsed {"__proto__": ...} sets one). */
function prototypeHoldsEnumerable() {
for (const _ in Object.prototype) return true;
return false;
}

/** The validator that judges with \`plain\` while Object.prototype holds no enumerable field, else with \`own\`. */
function eitherForm(plain, own) {
const validate = (data) => {
const form = prototypeHoldsEnumerable() ? own : plain;
const valid = form(data);
validate.errors = form.errors;
return valid;
};
return validate;
}`;

/**
 * Compiles the roots into the text of an ES module exporting one validation
 * function per root. Each is compiled twice: `own` judges only an object's
 * own fields (ajv's `ownProperties`), so an enumerable field set on
 * `Object.prototype` is neither an undeclared field of every input nor a
 * required field present; `plain` reads fields as ajv does by default, at
 * about a third of the cost for a nested input, and judges the same while
 * `Object.prototype` holds no enumerable field, which each call checks
 * first. Throws if ajv emitted a helper this module cannot map (a generator
 * bug, never a spec problem: the meta-schema bounds the keywords).
 */
export function compileValidators(roots: readonly ValidatorRoot[], pkg: PackageModel): string {
  boundedPatterns.clear();
  const aliases: string[] = [];
  const plain = compileForm(roots, pkg, false, aliases);
  const own = compileForm(roots, pkg, true, undefined);
  const chosen = plain.exports.map(([name]) => `export const ${name} = eitherForm(plain.${name}, own.${name});`);
  const parts = [
    "// Every validator in two forms (see eitherForm): plain reads inherited fields, own only an object's own.",
    formBlock("plain", plain),
    formBlock("own", own),
    CHOOSER,
    [...chosen, ...aliases].join("\n"),
  ];
  const code = parts.join("\n\n");
  const imports = code.includes("validatorRuntime.") ? 'import { validatorRuntime } from "taquba/generated";\n\n' : "";
  return `${imports}${code}\n`;
}
