/**
 * @module Typed validators over precompiled JSON Schema checks.
 *
 * The generator turns each schema of a spec into a standalone ajv function;
 * `createValidator` wraps one into a `Validator<T>` that reports every
 * violation by path, narrows types with `is`/`assert`, and speaks the
 * Standard Schema v1 protocol so other libraries can use it directly.
 */

import { ValidationError } from "../errors.js";
import { describeValue, readOptions } from "../option-values.js";

/** One violation: where (a JSON pointer, `""` for the value itself) and what. */
export interface ValidationIssue {
  readonly path: string;
  readonly message: string;
}

/** The Standard Schema v1 result of validating one value. */
export type StandardSchemaResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: ReadonlyArray<StandardSchemaIssue> };

/** A Standard Schema v1 issue: a message and the property path to the offending value. */
export interface StandardSchemaIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey>;
}

/** The Standard Schema v1 interface (`~standard`), written out so no dependency is needed. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardSchemaResult<Output>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/** A run-time check of values against one schema of a spec, typed as `T`. */
export interface Validator<T> extends StandardSchemaV1<T, T> {
  /** What is validated, e.g. `billing.email.send input`; it opens error messages. */
  readonly name: string;
  /** Every violation; empty when the value conforms. Never throws. */
  validate(value: unknown): readonly ValidationIssue[];
  /** Whether the value conforms. */
  is(value: unknown): value is T;
  /** Throws a `ValidationError` listing every violation by path unless the value conforms. */
  assert(value: unknown): asserts value is T;
}

/** The shape of one ajv error object that wrappers read. */
export interface RawValidationError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly message?: string;
}

/** A precompiled (standalone ajv) validation function, compiled with `allErrors`. */
export interface RawValidateFunction {
  (value: unknown): boolean;
  errors?: readonly RawValidationError[] | null;
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

function toIssue(e: RawValidationError): ValidationIssue {
  // ajv reports a missing or extra property at its parent; naming the
  // property itself tells the caller exactly which field to fix.
  const missing = e.params["missingProperty"];
  if (e.keyword === "required" && typeof missing === "string") {
    return { path: `${e.instancePath}/${escapePointer(missing)}`, message: "is required" };
  }
  const extra = e.params["additionalProperty"];
  if (e.keyword === "additionalProperties" && typeof extra === "string") {
    return { path: `${e.instancePath}/${escapePointer(extra)}`, message: "is not a declared property" };
  }
  const allowed = e.params["allowedValues"];
  if (e.keyword === "enum" && Array.isArray(allowed)) {
    return { path: e.instancePath, message: `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}` };
  }
  return { path: e.instancePath, message: e.message ?? `fails "${e.keyword}"` };
}

function pointerToPath(pointer: string): PropertyKey[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((s) => (/^(0|[1-9]\d*)$/.test(s) ? Number(s) : unescapePointer(s)));
}

/** Renders an issue as one line, `/to: must match format "email"`. */
export function formatIssue(issue: ValidationIssue): string {
  const { path, message } = readOptions(issue, ["path", "message"], "issue", "a validation issue");
  if (typeof path !== "string" || typeof message !== "string")
    throw new ValidationError(
      `a validation issue has a path and a message, both strings (as a Validator gives), got ${describeValue(path)} and ${describeValue(message)}`,
    );
  return `${path === "" ? "(value)" : path}: ${message}`;
}

/**
 * Wraps a precompiled validation function as a typed `Validator<T>`.
 *
 * @example
 * const input = createValidator<{ to: string }>("billing.email.send input", validateEmailSendInput);
 * input.assert({ to: "a@b.c" });
 */
export function createValidator<T>(name: string, raw: RawValidateFunction): Validator<T> {
  const validate = (value: unknown): readonly ValidationIssue[] => {
    if (raw(value)) return [];
    const issues = (raw.errors ?? []).map(toIssue);
    return issues.length > 0 ? issues : [{ path: "", message: "does not conform to its schema" }];
  };
  const validator: Validator<T> = {
    name,
    validate,
    is: (value: unknown): value is T => raw(value),
    assert(value: unknown): asserts value is T {
      const issues = validate(value);
      if (issues.length > 0) {
        throw new ValidationError(`invalid ${name}; fix these fields and retry`, issues.map(formatIssue));
      }
    },
    "~standard": {
      version: 1,
      vendor: "taquba",
      validate: (value: unknown): StandardSchemaResult<T> => {
        const issues = validate(value);
        if (issues.length === 0) return { value: value as T };
        return { issues: issues.map((i) => ({ message: i.message, path: pointerToPath(i.path) })) };
      },
    },
  };
  return Object.freeze(validator);
}
