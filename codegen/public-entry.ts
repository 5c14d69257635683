/**
 * @module The functions `taquba/codegen` exports, each checking its
 * arguments once at the top (see entry-args.ts) before running the stage
 * it names. The CLI and the stages call one another directly: their values
 * are built here, so only a caller's values are checked.
 */
import { buildModel as buildModelRaw, normaliseSchema as normaliseSchemaRaw } from "./analyse/build-model.js";
import { checkPackage as checkPackageRaw } from "./analyse/check-spec.js";
import { hasErrors as hasErrorsRaw, renderDiagnostic as renderDiagnosticRaw, sortDiagnostics as sortDiagnosticsRaw } from "./analyse/diagnostics.js";
import type { Diagnostic } from "./analyse/diagnostics.js";
import { loadSpec as loadSpecRaw } from "./analyse/load-spec.js";
import type { LoadedSpec } from "./analyse/load-spec.js";
import type { JsonSchema, PackageModel } from "./analyse/spec-model.js";
import { validateSpec as validateSpecRaw } from "./analyse/validate-spec.js";
import { main as mainRaw } from "./cli/cli.js";
import type { CliIo } from "./cli/cli.js";
import { compareOutput as compareOutputRaw, hasDrift as hasDriftRaw } from "./cli/output-check.js";
import type { OutputDrift } from "./cli/output-check.js";
import { scaffoldFiles as scaffoldFilesRaw } from "./cli/scaffold.js";
import {
  buildLock as buildLockRaw,
  diffLocks as diffLocksRaw,
  lockPathFor as lockPathForRaw,
  parseLock as parseLockRaw,
  renderChange as renderChangeRaw,
  renderLock as renderLockRaw,
} from "./contract/contract-lock.js";
import type { ContractChange, ContractLock } from "./contract/contract-lock.js";
import { canonicalJson as canonicalJsonRaw, contractHash as contractHashRaw } from "./contract/contract.js";
import { compileValidators as compileValidatorsRaw, selfContained as selfContainedRaw } from "./emit/compile-validators.js";
import type { ValidatorRoot } from "./emit/compile-validators.js";
import { schemaToType as schemaToTypeRaw } from "./emit/schema-to-type.js";
import { ValidationError } from "../runtime/errors.js";
import { describeValue } from "../runtime/option-values.js";
import { argArray, argInstance, argJson, argMethods, argObject, argPath, argSchema, argSpecInputs, argText, entryCall } from "./entry-args.js";
import {
  analyse as analyseRaw,
  emitPackage as emitPackageRaw,
  GenerationCache,
  generate as generateRaw,
  validatorRoots as validatorRootsRaw,
} from "./generate.js";
import type { GeneratedFile } from "./generate.js";

const PKG = "a package model (from analyse or generate)";
const LOCK = "a contract lock (from buildLock or parseLock)";
const DIAGNOSTIC = "a diagnostic (from loadSpec, validateSpec, analyse or generate)";

const pkgArg = (at: string, v: unknown) => argObject(at, v, PKG) as PackageModel;
const schemaArg = (at: string, v: unknown) => argSchema(at, v) as JsonSchema;
const cacheArg = (at: string, v: unknown) => argInstance(at, v, GenerationCache, "a GenerationCache or absent", true);

/** Parses one spec file; problems with the spec come back as diagnostics. */
export function loadSpec(file: string, source: string): LoadedSpec {
  return entryCall("loadSpec", () => loadSpecRaw(argPath("loadSpec's file", file), argText("loadSpec's source", source) as string));
}

/** Checks a loaded spec against the spec format. */
export function validateSpec(spec: LoadedSpec): Diagnostic[] {
  return entryCall("validateSpec", () => {
    argObject("validateSpec's spec", spec, "a loaded spec (from loadSpec)");
    return validateSpecRaw(spec);
  });
}

/** The package model of a spec file's parsed value. */
export function buildModel(file: string, value: unknown): PackageModel {
  return entryCall("buildModel", () =>
    buildModelRaw(argPath("buildModel's file", file), argObject("buildModel's value", value, "a parsed spec (loadSpec's value)")),
  );
}

/** A spec schema in the form the emitters read. */
export function normaliseSchema(schema: unknown): JsonSchema {
  return entryCall("normaliseSchema", () => normaliseSchemaRaw(schemaArg("normaliseSchema's schema", schema)));
}

/** The semantic problems of one package. */
export function checkPackage(pkg: PackageModel, locator: LoadedSpec["locator"]): Diagnostic[] {
  return entryCall("checkPackage", () => {
    argMethods("checkPackage's locator", locator, ["locate"]);
    return checkPackageRaw(pkgArg("checkPackage's pkg", pkg), locator);
  });
}

/** Loads, validates and checks specs into models, without emitting. */
export function analyse(inputs: Parameters<typeof analyseRaw>[0], cache?: GenerationCache): ReturnType<typeof analyseRaw> {
  return entryCall("analyse", () => analyseRaw(argSpecInputs("analyse's inputs", inputs), cacheArg("analyse's cache", cache)));
}

/** Generates every file for a set of spec files; files come back only when no diagnostic is an error. */
export function generate(inputs: Parameters<typeof generateRaw>[0], cache?: GenerationCache): ReturnType<typeof generateRaw> {
  return entryCall("generate", () => generateRaw(argSpecInputs("generate's inputs", inputs), cacheArg("generate's cache", cache)));
}

/** The files of one package, under `<package>/`. */
export function emitPackage(pkg: PackageModel, specText?: string): GeneratedFile[] {
  return entryCall("emitPackage", () => emitPackageRaw(pkgArg("emitPackage's pkg", pkg), argText("emitPackage's specText", specText, true)));
}

/** Every schema of a package that gets a precompiled validator. */
export function validatorRoots(pkg: PackageModel): ValidatorRoot[] {
  return entryCall("validatorRoots", () => validatorRootsRaw(pkgArg("validatorRoots's pkg", pkg)));
}

/** The standalone validator module of a package's roots. */
export function compileValidators(roots: readonly ValidatorRoot[], pkg: PackageModel): string {
  return entryCall("compileValidators", () => {
    const copy = argArray("compileValidators's roots", roots, "validator roots (from validatorRoots)") as ValidatorRoot[];
    for (const [i, r] of copy.entries()) argObject(`compileValidators's roots[${i}]`, r, "a validator root (from validatorRoots)");
    return compileValidatorsRaw(copy, pkgArg("compileValidators's pkg", pkg));
  });
}

/** A schema with the package's shared types it refers to inlined. */
export function selfContained(schema: JsonSchema, pkg: PackageModel): JsonSchema {
  return entryCall("selfContained", () => selfContainedRaw(schemaArg("selfContained's schema", schema), pkgArg("selfContained's pkg", pkg)));
}

/** The TypeScript type of a schema, indented by `indent` levels (0 to 32). */
export function schemaToType(schema: JsonSchema, indent = 0): string {
  return entryCall("schemaToType", () => {
    if (typeof indent !== "number" || !Number.isInteger(indent) || indent < 0 || indent > 32)
      throw new ValidationError(`schemaToType's indent must be a whole number from 0 to 32, got ${describeValue(indent)}`);
    return schemaToTypeRaw(schemaArg("schemaToType's schema", schema), indent + 0);
  });
}

/** Whether any diagnostic is an error. */
export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return entryCall("hasErrors", () => hasErrorsRaw(diagnosticsArg("hasErrors's diagnostics", diagnostics)));
}

/** Diagnostics in file, line and column order. */
export function sortDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  return entryCall("sortDiagnostics", () => sortDiagnosticsRaw(diagnosticsArg("sortDiagnostics's diagnostics", diagnostics)));
}

/** One diagnostic as the CLI prints it, with the spec line when `source` is given. */
export function renderDiagnostic(d: Diagnostic, source?: string): string {
  return entryCall("renderDiagnostic", () =>
    renderDiagnosticRaw(argObject("renderDiagnostic's diagnostic", d, DIAGNOSTIC) as Diagnostic, argText("renderDiagnostic's source", source, true)),
  );
}

/** What differs between the files a generation produces and those on disk. */
export function compareOutput(expected: readonly GeneratedFile[], onDisk: ReadonlyMap<string, string>): OutputDrift {
  return entryCall("compareOutput", () => {
    const files = argArray("compareOutput's expected", expected, "generated files (from generate)") as GeneratedFile[];
    for (const [i, f] of files.entries()) argObject(`compareOutput's expected[${i}]`, f, "a generated file (from generate)");
    return compareOutputRaw(files, argInstance("compareOutput's onDisk", onDisk, Map, "a Map of path to file text") as ReadonlyMap<string, string>);
  });
}

/** Whether a comparison found any difference. */
export function hasDrift(drift: OutputDrift): boolean {
  return entryCall("hasDrift", () => hasDriftRaw(argObject("hasDrift's drift", drift, "an output comparison (from compareOutput)") as OutputDrift));
}

/** Handler stubs for the packages' jobs and workflows. */
export function scaffoldFiles(packages: readonly PackageModel[], importPath: string): GeneratedFile[] {
  return entryCall("scaffoldFiles", () => {
    const pkgs = argArray("scaffoldFiles's packages", packages, PKG).map((p, i) => pkgArg(`scaffoldFiles's packages[${i}]`, p));
    return scaffoldFilesRaw(pkgs, argPath("scaffoldFiles's importPath", importPath));
  });
}

/** The contract lock of a package. */
export function buildLock(pkg: PackageModel): ContractLock {
  return entryCall("buildLock", () => buildLockRaw(pkgArg("buildLock's pkg", pkg)));
}

/** The contract changes from one lock to the next. */
export function diffLocks(before: ContractLock, after: ContractLock): ContractChange[] {
  return entryCall("diffLocks", () =>
    diffLocksRaw(argObject("diffLocks's before", before, LOCK) as ContractLock, argObject("diffLocks's after", after, LOCK) as ContractLock),
  );
}

/** Where the lock of a spec file is committed. */
export function lockPathFor(specFile: string): string {
  return entryCall("lockPathFor", () => lockPathForRaw(argPath("lockPathFor's specFile", specFile)));
}

/** Parses a committed lock; undefined when the text is not one. */
export function parseLock(text: string): ContractLock | undefined {
  return entryCall("parseLock", () => parseLockRaw(argText("parseLock's text", text) as string));
}

/** One contract change as the CLI prints it. */
export function renderChange(c: ContractChange): string {
  return entryCall("renderChange", () => renderChangeRaw(argObject("renderChange's change", c, "a contract change (from diffLocks)") as ContractChange));
}

/** The lock as committed text. */
export function renderLock(lock: ContractLock): string {
  return entryCall("renderLock", () => renderLockRaw(argObject("renderLock's lock", lock, LOCK) as ContractLock));
}

/** JSON with keys in code-unit order, the form contracts are hashed in. */
export function canonicalJson(value: unknown): string {
  return entryCall("canonicalJson", () => {
    return canonicalJsonRaw(argJson("canonicalJson's value", value));
  });
}

/** The hash of a contract. */
export function contractHash(contract: Parameters<typeof contractHashRaw>[0]): string {
  return entryCall("contractHash", () => {
    return contractHashRaw(argJson("contractHash's contract", contract) as typeof contract);
  });
}

/** Runs the CLI with `argv` (without the node and script entries). Resolves to the exit code. */
export function main(argv: readonly string[], io?: CliIo, signal?: AbortSignal): Promise<number> {
  return entryCall("main", async () => {
    const args = argArray("main's argv", argv, "strings").map((a, i) => argText(`main's argv[${i}]`, a) as string);
    if (io !== undefined) {
      argMethods("main's io", io, ["out", "err"]);
      argPath("main's io.cwd", io.cwd);
    }
    argInstance("main's signal", signal, AbortSignal, "an AbortSignal or absent", true);
    return io === undefined ? mainRaw(args, undefined, signal) : mainRaw(args, io, signal);
  });
}

function diagnosticsArg(at: string, v: unknown): Diagnostic[] {
  return argArray(at, v, "diagnostics").map((d, i) => argObject(`${at}[${i}]`, d, DIAGNOSTIC) as Diagnostic);
}
