/**
 * @module Emits `types.ts`: one TypeScript type per schema of a package.
 */

import { headersType, jobNames, signalNames, stepNames, workflowNames } from "./generated-names.js";
import { jsDoc } from "./names.js";
import { schemaToType } from "./schema-to-type.js";
import type { JsonSchema, PackageModel } from "../analyse/spec-model.js";
import { Imports, printFile } from "../print/ts-file.js";

function isPlainObject(schema: JsonSchema): boolean {
  return schema["type"] === "object" && ["$ref", "oneOf", "anyOf", "allOf", "enum", "const"].every((k) => !(k in schema));
}

/**
 * The declaration of a named type for a schema, as source text: an
 * interface for plain objects (better hovers and error messages), a type
 * alias otherwise. `alias` forces a type alias, which header sets need: only
 * aliases get implicit index signatures, and header types must fit `HeaderValues`.
 */
export function typeDeclaration(name: string, schema: JsonSchema, description: string | undefined, alias = false): string {
  const doc = description ?? (typeof schema["description"] === "string" ? schema["description"] : undefined);
  const head = doc === undefined ? "" : `${jsDoc(doc)}\n`;
  if (!alias && isPlainObject(schema)) {
    const body = schemaToType(schema, 0);
    return `${head}export interface ${name} ${body === "Record<string, never>" ? "{}" : body}`;
  }
  return `${head}export type ${name} = ${schemaToType(schema, 0)};`;
}

/** The header set as one object schema: required headers required, no others allowed. */
export function headersSchema(pkg: PackageModel): JsonSchema {
  return {
    type: "object",
    required: pkg.headers.filter((h) => h.required).map((h) => h.name),
    properties: Object.fromEntries(pkg.headers.map((h) => [h.name, h.schema])),
    additionalProperties: false,
  };
}

/** The text of `types.ts`. */
export function emitTypes(pkg: PackageModel, source: string): string {
  const statements: string[] = [];
  for (const t of pkg.types) statements.push(typeDeclaration(t.name, t.schema, undefined));
  statements.push(typeDeclaration(headersType(pkg), headersSchema(pkg), `The headers every job of package "${pkg.name}" carries.`, true));
  for (const j of pkg.jobs) {
    const n = jobNames(j);
    statements.push(typeDeclaration(n.input, j.input, `Input of job "${j.name}".`));
    statements.push(typeDeclaration(n.output, j.output, `Output of job "${j.name}".`));
    if (j.error !== undefined) statements.push(typeDeclaration(n.error, j.error, `Typed error of job "${j.name}".`));
  }
  for (const s of pkg.signals) {
    const n = signalNames(s);
    statements.push(typeDeclaration(n.params, s.params, `Parameters of the correlation key of signal "${s.name}" (\`${s.keyTemplate}\`).`));
    statements.push(typeDeclaration(n.payload, s.payload, `Payload of signal "${s.name}".`));
  }
  for (const w of pkg.workflows) {
    const n = workflowNames(w);
    statements.push(typeDeclaration(n.input, w.input, `Input of workflow "${w.name}": the payload of its entry step "${w.steps[0]?.name ?? ""}".`));
    statements.push(typeDeclaration(n.result, w.result, `Result of workflow "${w.name}".`));
    if (w.error !== undefined) statements.push(typeDeclaration(n.error, w.error, `Typed error of workflow "${w.name}".`));
    for (const s of w.steps) {
      const sn = stepNames(w, s);
      if (sn.ownPayload && s.payload !== undefined) {
        statements.push(
          typeDeclaration(
            sn.payload,
            s.payload,
            s.description === undefined
              ? `Payload of step "${s.name}" of workflow "${w.name}".`
              : `Payload of step "${s.name}" of workflow "${w.name}": ${s.description}`,
          ),
        );
      }
    }
  }
  return printFile(source, new Imports(), statements);
}
