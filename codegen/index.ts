/**
 * @module The code generator as a library: every stage is exported so tools
 * can run part of the pipeline (an editor plugin may only load and check).
 *
 * `generate()` is the whole pipeline and does no IO; `main()` is the CLI.
 * Each function checks its arguments once (see public-entry.ts): a wrong
 * value is a `ValidationError`, never a TypeError from inside a stage.
 */

export {
  analyse,
  buildLock,
  buildModel,
  canonicalJson,
  checkPackage,
  compareOutput,
  compileValidators,
  contractHash,
  diffLocks,
  emitPackage,
  generate,
  hasDrift,
  hasErrors,
  loadSpec,
  lockPathFor,
  main,
  normaliseSchema,
  parseLock,
  renderChange,
  renderDiagnostic,
  renderLock,
  scaffoldFiles,
  schemaToType,
  selfContained,
  sortDiagnostics,
  validateSpec,
  validatorRoots,
} from "./public-entry.js";

export type { LoadedSpec, SourceLocator, SpecPath } from "./analyse/load-spec.js";
export { specMetaSchema } from "./analyse/validate-spec.js";
// The runtime's own parser, which checks its argument itself (test/codegen/key-template.test.ts holds them the same).
export { templateFields } from "./analyse/check-spec.js";
export type { JsonValue, JsonSchema, TypeModel, HeaderModel, SignalModel, JobModel, StepModel, WorkflowModel, PackageModel } from "./analyse/spec-model.js";
export type { GenerateResult, GeneratedFile, LockOutput, SpecInput } from "./generate.js";
export type { ValidatorRoot } from "./emit/compile-validators.js";
export type { Diagnostic, DiagnosticCode, Severity } from "./analyse/diagnostics.js";
export type { OutputDrift } from "./cli/output-check.js";
export type { ContractChange, ContractLock } from "./contract/contract-lock.js";
export type { CliIo } from "./cli/cli.js";
