/**
 * @module The generator as one pure function: spec texts in, files and
 * diagnostics out. Only the CLI reads and writes the disk.
 *
 * Stages: load (YAML with positions) -> validate (meta-schema) -> build the
 * frozen model -> check semantics -> emit. Every file's problems are
 * collected before stopping; when any is an error, no file is produced.
 */

import { checkPackage, foreignRefProblems } from "./analyse/check-spec.js";
import { buildLock, lockPathFor, renderLock, type ContractLock } from "./contract/contract-lock.js";
import { buildModel } from "./analyse/build-model.js";
import { compileValidators, type ValidatorRoot } from "./emit/compile-validators.js";
import { hasErrors, sortDiagnostics, type Diagnostic } from "./analyse/diagnostics.js";
import { emitClient } from "./emit/emit-client.js";
import { emitDefinitions } from "./emit/emit-definitions.js";
import { emitHandlers } from "./emit/emit-handlers.js";
import { emitTypes, headersSchema } from "./emit/emit-types.js";
import { emitWorkflows } from "./emit/emit-workflows.js";
import { headersType, jobNames, signalNames, stepNames, validatorName, workflowNames } from "./emit/generated-names.js";
import { loadSpec, type SourceLocator } from "./analyse/load-spec.js";
import { compareCodeUnits, docText } from "./emit/names.js";
import type { PackageModel } from "./analyse/spec-model.js";
import { createHash } from "node:crypto";
import { finishText, headerComment, specSource } from "./print/ts-file.js";
import { validateSpec } from "./analyse/validate-spec.js";

/** One spec file to generate from. `file` is the path shown in diagnostics and headers (relative, `/`-separated). */
export interface SpecInput {
  readonly file: string;
  readonly source: string;
}

/** One generated file; `path` is relative to the output folder, `/`-separated. */
export interface GeneratedFile {
  readonly path: string;
  readonly content: string;
}

/** The contract lock of one spec file, to be committed beside it. */
export interface LockOutput {
  /** The lock's path, beside the spec (same form as the spec's `file`). */
  readonly file: string;
  readonly lock: ContractLock;
  readonly content: string;
}

/** What `generate` returns: the files and contract locks to write, and every diagnostic found. */
export interface GenerateResult {
  /** One per package, sorted by file; empty when any diagnostic is an error. */
  readonly locks: readonly LockOutput[];
  /** Sorted by path; empty when any diagnostic is an error. */
  readonly files: readonly GeneratedFile[];
  /** Sorted by file, line and column. */
  readonly diagnostics: readonly Diagnostic[];
  /** The models of the specs that passed every check (also when another file failed). */
  readonly packages: readonly PackageModel[];
}

/** What one spec file analyses to; depends only on its path and text. */
interface FileAnalysis {
  /** Syntax, meta-schema and semantic problems of the file. */
  readonly diagnostics: readonly Diagnostic[];
  /** The model, when the file passed the meta-schema. */
  readonly model: PackageModel | undefined;
  /** Whether the semantic checks found an error (the model is then not emitted). */
  readonly failed: boolean;
  /** Where the package name is, for a duplicate-package diagnostic. */
  readonly packageAt: { readonly line: number; readonly column: number } | undefined;
  /** Positions in the file, for the checks that need every package (references to other packages). */
  readonly locator: SourceLocator | undefined;
}

function analyseFile(input: SpecInput): FileAnalysis {
  const loaded = loadSpec(input.file, input.source);
  const diagnostics = [...loaded.diagnostics];
  if (loaded.value === undefined) return { diagnostics, model: undefined, failed: true, packageAt: undefined, locator: undefined };
  const schemaProblems = validateSpec(loaded);
  diagnostics.push(...schemaProblems);
  if (schemaProblems.length > 0) {
    // Every problem at once: the workflow graph checks still run on what parsed, so a
    // format error does not hide a wrong step name. A model too broken to build adds nothing.
    diagnostics.push(...graphProblemsDespite(input.file, loaded));
    return { diagnostics, model: undefined, failed: true, packageAt: undefined, locator: undefined };
  }
  const model = buildModel(input.file, loaded.value);
  const problems = checkPackage(model, loaded.locator);
  diagnostics.push(...problems);
  return { diagnostics, model, failed: hasErrors(problems), packageAt: loaded.locator.locate(["package"], "value"), locator: loaded.locator };
}

/** Problems of the workflow step graphs, which stand on their own even when the rest of the file breaks the format. */
const GRAPH_CODES: ReadonlySet<string> = new Set([
  "UNKNOWN_STEP",
  "UNREACHABLE_STEP",
  "UNKNOWN_SIGNAL",
  "WAIT_WITHOUT_TIMEOUT",
  "TIMEOUT_WITHOUT_WAIT",
  "BAD_ENTRY_STEP",
]);

function graphProblemsDespite(file: string, loaded: ReturnType<typeof loadSpec>): Diagnostic[] {
  try {
    const model = buildModel(file, loaded.value);
    return checkPackage(model, loaded.locator).filter((d) => GRAPH_CODES.has(d.code));
  } catch {
    return [];
  }
}

interface Emitted {
  readonly files: readonly GeneratedFile[];
  readonly lock: LockOutput;
}

/**
 * Per-spec results kept between generation passes (the CLI's `--watch`):
 * a spec file's analysis and emitted files are reused while its text is
 * unchanged, so a pass re-analyses and re-emits only the packages whose
 * spec changed. Holds one entry per spec file of the latest pass.
 */
export class GenerationCache {
  private readonly analyses = new Map<string, { readonly source: string; readonly analysis: FileAnalysis }>();
  private readonly emitted = new Map<string, { readonly source: string; readonly out: Emitted }>();
  /** The spec files the latest pass emitted afresh (not reused), sorted. */
  lastEmitted: string[] = [];

  /** @internal */
  analysis(input: SpecInput): FileAnalysis {
    const hit = this.analyses.get(input.file);
    if (hit !== undefined && hit.source === input.source) return hit.analysis;
    const analysis = analyseFile(input);
    this.analyses.set(input.file, { source: input.source, analysis });
    return analysis;
  }

  /** @internal */
  emit(pkg: PackageModel, source: string): Emitted {
    const hit = this.emitted.get(pkg.file);
    if (hit !== undefined && hit.source === source) return hit.out;
    const out = emitWithLock(pkg, source);
    this.emitted.set(pkg.file, { source, out });
    this.lastEmitted.push(pkg.file);
    return out;
  }

  /** @internal Drops entries of spec files that are gone, so memory follows the current set. */
  retain(files: ReadonlySet<string>): void {
    for (const map of [this.analyses, this.emitted]) for (const f of [...map.keys()]) if (!files.has(f)) map.delete(f);
  }
}

/** Loads, validates and checks specs into models, without emitting. */
export function analyse(inputs: readonly SpecInput[], cache?: GenerationCache): { packages: PackageModel[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const packages: PackageModel[] = [];
  const owners = new Map<string, string>();
  const locators = new Map<string, SourceLocator | undefined>();
  const models: PackageModel[] = [];
  for (const input of [...inputs].sort((a, b) => compareCodeUnits(a.file, b.file))) {
    const a = cache === undefined ? analyseFile(input) : cache.analysis(input);
    diagnostics.push(...a.diagnostics);
    const model = a.model;
    if (model === undefined) continue;
    const owner = owners.get(model.name);
    if (owner !== undefined) {
      const p = a.packageAt ?? { line: 1, column: 1 };
      diagnostics.push({
        code: "DUPLICATE_PACKAGE",
        severity: "error",
        file: input.file,
        line: p.line,
        column: p.column,
        message: `package "${model.name}" is also declared by ${owner}; give each spec file its own package name`,
      });
      continue;
    }
    owners.set(model.name, input.file);
    models.push(model);
    locators.set(model.file, a.locator);
    if (!a.failed) packages.push(model);
  }
  // References to workflows of other packages need every package of the generation.
  for (const model of models) {
    const locator = locators.get(model.file);
    const found: Diagnostic[] = [];
    foreignRefProblems(model, models, (code, path, message, at = "key", severity = "error") => {
      const p = locator?.locate(path, at) ?? { line: 1, column: 1 };
      found.push({ code, severity, file: model.file, line: p.line, column: p.column, message });
    });
    diagnostics.push(...found);
    if (hasErrors(found)) packages.splice(packages.indexOf(model), packages.includes(model) ? 1 : 0);
  }
  return { packages, diagnostics: sortDiagnostics(diagnostics) };
}

/** Every schema of a package that gets a precompiled validator. */
export function validatorRoots(pkg: PackageModel): ValidatorRoot[] {
  const roots: ValidatorRoot[] = [{ exportName: validatorName(headersType(pkg)), schema: headersSchema(pkg) }];
  for (const j of pkg.jobs) {
    const n = jobNames(j);
    roots.push({ exportName: validatorName(n.input), schema: j.input });
    roots.push({ exportName: validatorName(n.output), schema: j.output });
    if (j.error !== undefined) roots.push({ exportName: validatorName(n.error), schema: j.error });
  }
  for (const s of pkg.signals) {
    const n = signalNames(s);
    roots.push({ exportName: validatorName(n.params), schema: s.params });
    roots.push({ exportName: validatorName(n.payload), schema: s.payload });
  }
  for (const w of pkg.workflows) {
    const n = workflowNames(w);
    roots.push({ exportName: validatorName(n.input), schema: w.input });
    roots.push({ exportName: validatorName(n.result), schema: w.result });
    if (w.error !== undefined) roots.push({ exportName: validatorName(n.error), schema: w.error });
    for (const s of w.steps) {
      const sn = stepNames(w, s);
      if (sn.ownPayload && s.payload !== undefined) roots.push({ exportName: validatorName(sn.payload), schema: s.payload });
    }
    // Steps declaring no payload are entered with null.
    if (w.steps.some((s, i) => i > 0 && s.payload === undefined)) roots.push({ exportName: validatorName(`${w.typeName}_null`), schema: { type: "null" } });
  }
  return roots;
}

/**
 * The files of one package, under `<package>/`. With the spec's text, each
 * file's header also carries the text's SHA-256 (see `specSource`).
 */
export function emitPackage(pkg: PackageModel, specText?: string): GeneratedFile[] {
  const src = specText === undefined ? pkg.file : specSource(pkg.file, createHash("sha256").update(specText).digest("hex"));
  const dir = pkg.name;
  const validators = compileValidators(validatorRoots(pkg), pkg);
  const files: GeneratedFile[] = [
    { path: `${dir}/types.ts`, content: emitTypes(pkg, src) },
    {
      path: `${dir}/validators.ts`,
      // ajv's standalone code is untyped JavaScript; the typed surface is definitions.ts.
      content: finishText(`${headerComment(src)}\n// @ts-nocheck\n/* eslint-disable */\n${validators}`),
    },
    { path: `${dir}/definitions.ts`, content: emitDefinitions(pkg, src) },
    { path: `${dir}/client.ts`, content: emitClient(pkg, src) },
    {
      path: `${dir}/package.ts`,
      content: finishText(
        `${headerComment(src)}\n${[
          "client",
          "definitions",
          ...(pkg.jobs.length > 0 ? ["handlers"] : []),
          "types",
          ...(pkg.workflows.length > 0 ? ["workflows"] : []),
        ]
          .map((m) => `export * from "./${m}.js";`)
          .join("\n")}`,
      ),
    },
    {
      path: `${dir}/index.ts`,
      content: finishText(
        `${headerComment(src)}\n/** Package "${pkg.name}"${pkg.description === undefined ? "" : `: ${docText(pkg.description)}`} */\nexport * as ${pkg.ident} from "./package.js";`,
      ),
    },
  ];
  if (pkg.jobs.length > 0) files.push({ path: `${dir}/handlers.ts`, content: emitHandlers(pkg, src) });
  if (pkg.workflows.length > 0) files.push({ path: `${dir}/workflows.ts`, content: emitWorkflows(pkg, src) });
  return files;
}

function emitWithLock(pkg: PackageModel, specText: string): Emitted {
  const lock = buildLock(pkg);
  return { lock: { file: lockPathFor(pkg.file), lock, content: renderLock(lock) }, files: emitPackage(pkg, specText) };
}

/**
 * Generates every file for a set of spec files. Pure: same inputs, same
 * bytes. Files come back only when no diagnostic is an error.
 */
export function generate(inputs: readonly SpecInput[], cache?: GenerationCache): GenerateResult {
  if (cache !== undefined) {
    cache.retain(new Set(inputs.map((i) => i.file)));
    cache.lastEmitted = [];
  }
  const { packages, diagnostics } = analyse(inputs, cache);
  if (hasErrors(diagnostics)) return { files: [], locks: [], diagnostics, packages };
  const texts = new Map(inputs.map((i) => [i.file, i.source]));
  const emitted = packages.map((p) => (cache === undefined ? emitWithLock(p, texts.get(p.file) ?? "") : cache.emit(p, texts.get(p.file) ?? "")));
  if (cache !== undefined) cache.lastEmitted.sort(compareCodeUnits);
  const locks = emitted.map((e) => e.lock);
  const files = emitted.flatMap((e) => e.files);
  if (packages.length > 0) {
    const sources = packages.map((p) => p.file).join(", ");
    files.push({
      path: "index.ts",
      content: finishText(
        `${headerComment(sources)}\n${packages
          .map((p) => `export { ${p.ident} } from "./${p.name}/index.js";`)
          .sort(compareCodeUnits)
          .join("\n")}`,
      ),
    });
  }
  files.sort((a, b) => compareCodeUnits(a.path, b.path));
  return { files, locks, diagnostics, packages };
}
