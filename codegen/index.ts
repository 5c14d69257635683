/**
 * @module The code generator as a library: every stage is exported so tools
 * can run part of the pipeline (an editor plugin may only load and check).
 *
 * `generate()` is the whole pipeline and does no IO; `main()` is the CLI.
 */

export { loadSpec } from "./analyse/load-spec.js";
export type { LoadedSpec, SourceLocator, SpecPath } from "./analyse/load-spec.js";
export { validateSpec, specMetaSchema } from "./analyse/validate-spec.js";
export { buildModel, normaliseSchema } from "./analyse/build-model.js";
export { checkPackage, templateFields } from "./analyse/check-spec.js";
export type { JsonValue, JsonSchema, TypeModel, HeaderModel, SignalModel, JobModel, StepModel, WorkflowModel, PackageModel } from "./analyse/spec-model.js";
export { analyse, emitPackage, generate, validatorRoots } from "./generate.js";
export type { GenerateResult, GeneratedFile, LockOutput, SpecInput } from "./generate.js";
export { compileValidators, selfContained } from "./emit/compile-validators.js";
export type { ValidatorRoot } from "./emit/compile-validators.js";
export { schemaToType } from "./emit/schema-to-type.js";
export { hasErrors, renderDiagnostic, sortDiagnostics } from "./analyse/diagnostics.js";
export type { Diagnostic, DiagnosticCode, Severity } from "./analyse/diagnostics.js";
export { compareOutput, hasDrift } from "./cli/output-check.js";
export type { OutputDrift } from "./cli/output-check.js";
export { scaffoldFiles } from "./cli/scaffold.js";
export { buildLock, diffLocks, lockPathFor, parseLock, renderChange, renderLock } from "./contract/contract-lock.js";
export type { ContractChange, ContractLock } from "./contract/contract-lock.js";
export { canonicalJson, contractHash } from "./contract/contract.js";
export { main } from "./cli/cli.js";
export type { CliIo } from "./cli/cli.js";
