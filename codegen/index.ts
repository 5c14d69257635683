/**
 * @module The code generator as a library: every stage is exported so tools
 * can run part of the pipeline (an editor plugin may only load and check).
 *
 * `generate()` is the whole pipeline and does no IO; `main()` is the CLI.
 */

export { loadSpec } from "./load-spec.js";
export type { LoadedSpec, SourceLocator, SpecPath } from "./load-spec.js";
export { validateSpec, specMetaSchema } from "./validate-spec.js";
export { buildModel, normaliseSchema } from "./build-model.js";
export { checkPackage, templateFields } from "./check-spec.js";
export type { JsonValue, JsonSchema, TypeModel, HeaderModel, SignalModel, JobModel, StepModel, WorkflowModel, PackageModel } from "./spec-model.js";
export { analyse, emitPackage, generate, validatorRoots } from "./generate.js";
export type { GenerateResult, GeneratedFile, LockOutput, SpecInput } from "./generate.js";
export { compileValidators, selfContained } from "./compile-validators.js";
export type { ValidatorRoot } from "./compile-validators.js";
export { schemaToType } from "./schema-to-type.js";
export { hasErrors, renderDiagnostic, sortDiagnostics } from "./diagnostics.js";
export type { Diagnostic, DiagnosticCode, Severity } from "./diagnostics.js";
export { compareOutput, hasDrift } from "./output-check.js";
export type { OutputDrift } from "./output-check.js";
export { scaffoldFiles } from "./scaffold.js";
export { buildLock, diffLocks, lockPathFor, parseLock, renderChange, renderLock } from "./contract-lock.js";
export type { ContractChange, ContractLock } from "./contract-lock.js";
export { canonicalJson, contractHash } from "./contract.js";
export { main } from "./cli.js";
export type { CliIo } from "./cli.js";
