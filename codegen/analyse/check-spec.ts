/**
 * @module Stage 4: semantic checks over the package model.
 *
 * What the meta-schema cannot express: references between entries, key
 * templates against the fields they name, identifier collisions after
 * case conversion, and the consistency of workflow steps.
 */

import type { Diagnostic, DiagnosticCode } from "./diagnostics.js";
import type { SourceLocator, SpecPath } from "./load-spec.js";
import type { JsonSchema, JsonValue, PackageModel, WorkflowModel } from "./spec-model.js";
import { keyTemplateProblem, templateFields } from "../../runtime/contract/key-template.js";
import { patternProblem } from "./pattern-safety.js";
import { checkSchedules } from "./check-schedules.js";
import { scheduleInputHandlerType } from "../emit/generated-names.js";
import { checkFlowControl } from "./check-flow-control.js";

const REF_PREFIX = "#/types/";
// The runtime's parser, so the generator checks exactly the fields the runtime will read.
export { templateFields } from "../../runtime/contract/key-template.js";

/** Calls `visit` for every `pattern` in a schema, with the path of the `pattern` key. */
function forEachPattern(schema: JsonValue, path: SpecPath, visit: (pattern: string, path: SpecPath) => void): void {
  if (Array.isArray(schema)) {
    for (const [i, s] of schema.entries()) forEachPattern(s as JsonValue, [...path, i], visit);
    return;
  }
  if (typeof schema !== "object" || schema === null) return;
  for (const [k, v] of Object.entries(schema)) {
    if (k === "const" || k === "enum" || k === "default" || k === "examples") continue;
    // A property may itself be named "pattern"; only a string under it is the keyword.
    if (k === "pattern" && typeof v === "string") visit(v, [...path, k]);
    else forEachPattern(v, [...path, k], visit);
  }
}

/** Calls `visit` for every `$ref` in a schema, with the path of the `$ref` key. */
function forEachRef(schema: JsonValue, path: SpecPath, visit: (ref: string, path: SpecPath) => void): void {
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => {
      forEachRef(s as JsonValue, [...path, i], visit);
    });
    return;
  }
  if (typeof schema !== "object" || schema === null) return;
  for (const [k, v] of Object.entries(schema)) {
    if (k === "const" || k === "enum" || k === "default" || k === "examples") continue;
    if (k === "$ref" && typeof v === "string") visit(v, [...path, k]);
    else forEachRef(v, [...path, k], visit);
  }
}

export function resolve(schema: JsonSchema | undefined, pkg: PackageModel): JsonSchema | undefined {
  let s = schema;
  for (let hops = 0; s !== undefined && typeof s["$ref"] === "string" && hops < 32; hops++) {
    const name = (s["$ref"] as string).slice(REF_PREFIX.length);
    s = pkg.types.find((t) => t.name === name)?.schema;
  }
  return s;
}

const SCALARS = new Set(["string", "integer", "number", "boolean"]);

/** Whether every value a schema admits is a string, number or boolean. */
function isScalar(schema: JsonSchema): boolean {
  const t = schema["type"];
  if (typeof t === "string") return SCALARS.has(t);
  if (Array.isArray(t)) return t.length > 0 && t.every((x) => typeof x === "string" && SCALARS.has(x));
  const values = Array.isArray(schema["enum"]) ? (schema["enum"] as JsonValue[]) : "const" in schema ? [schema["const"] as JsonValue] : undefined;
  return values?.every((v) => typeof v === "string" || typeof v === "number" || typeof v === "boolean") ?? false;
}

/** Why `field` (dotted) cannot feed a key template over `schema`, or undefined when it can. */
export function fieldProblem(schema: JsonSchema, field: string, pkg: PackageModel): string | undefined {
  let current = resolve(schema, pkg);
  for (const seg of field.split(".")) {
    const props = current?.["properties"] as Record<string, JsonSchema> | undefined;
    if (current === undefined || props === undefined || !Object.hasOwn(props, seg) || props[seg] === undefined) {
      return `"${field}" names no declared field`;
    }
    const required = current["required"];
    if (!Array.isArray(required) || !required.includes(seg)) {
      return `"${field}" is optional, so the key could not always be built; make it required or key on another field`;
    }
    current = resolve(props[seg], pkg);
  }
  if (current === undefined || !isScalar(current)) {
    return `"${field}" is not a string, number or boolean`;
  }
  return undefined;
}

/** Runs every semantic check on one package. Empty when it is sound. */
export function checkPackage(pkg: PackageModel, locator: SourceLocator): Diagnostic[] {
  const out: Diagnostic[] = [];
  const report = (code: DiagnosticCode, path: SpecPath, message: string, at: "key" | "value" = "key", severity: "error" | "warning" = "error") => {
    const p = locator.locate(path, at);
    out.push({ code, severity, file: pkg.file, line: p.line, column: p.column, message });
  };

  // References between schemas.
  const typeNames = new Set(pkg.types.map((t) => t.name));
  const checkRefs = (schema: JsonSchema | undefined, path: SpecPath) => {
    if (schema === undefined) return;
    forEachPattern(schema, path, (pattern, at) => {
      const problem = patternProblem(pattern);
      if (problem !== undefined) report("UNSAFE_PATTERN", at, `pattern "${pattern}": ${problem}`, "value");
    });
    forEachRef(schema, path, (ref, at) => {
      const name = ref.slice(REF_PREFIX.length);
      if (!typeNames.has(name)) {
        const known = [...typeNames].sort().join(", ");
        report("UNKNOWN_REF", at, `"${ref}" names no entry of "types"; declare it there${known === "" ? "" : ` or use one of: ${known}`}`, "value");
      }
    });
  };
  for (const t of pkg.types) checkRefs(t.schema, t.path);
  for (const h of pkg.headers) checkRefs(h.schema, h.path);
  for (const s of pkg.signals) {
    checkRefs(s.payload, [...s.path, "payload"]);
    for (const [p, ps] of Object.entries((s.params["properties"] ?? {}) as Record<string, JsonSchema>)) {
      checkRefs(ps, [...s.path, "params", p]);
    }
  }
  for (const j of pkg.jobs) {
    checkRefs(j.input, [...j.path, "input"]);
    checkRefs(j.output, [...j.path, "output"]);
    checkRefs(j.error, [...j.path, "error"]);
  }
  for (const w of pkg.workflows) {
    checkRefs(w.input, [...w.path, "input"]);
    checkRefs(w.result, [...w.path, "result"]);
    checkRefs(w.error, [...w.path, "error"]);
    for (const s of w.steps) checkRefs(s.payload, [...s.path, "payload"]);
  }

  // Key templates.
  for (const j of pkg.jobs) {
    if (j.idempotencyKey === undefined) continue;
    const ambiguity = keyTemplateProblem(j.idempotencyKey);
    if (ambiguity !== undefined) report("BAD_KEY_TEMPLATE", [...j.path, "idempotency_key"], `idempotency key of job "${j.name}": ${ambiguity}`, "value");
    for (const field of templateFields(j.idempotencyKey)) {
      const problem = fieldProblem(j.input, field, pkg);
      if (problem !== undefined) {
        report("BAD_KEY_TEMPLATE", [...j.path, "idempotency_key"], `idempotency key of job "${j.name}": ${problem} of its input`, "value");
      }
    }
  }
  for (const s of pkg.signals) {
    const params = Object.keys((s.params["properties"] ?? {}) as Record<string, JsonSchema>);
    const fields = templateFields(s.keyTemplate);
    const ambiguity = keyTemplateProblem(s.keyTemplate);
    if (ambiguity !== undefined) report("BAD_KEY_TEMPLATE", [...s.path, "key"], `key of signal "${s.name}": ${ambiguity}`, "value");
    for (const field of fields) {
      if (!params.includes(field)) {
        report("BAD_KEY_TEMPLATE", [...s.path, "key"], `key of signal "${s.name}": "{${field}}" names no entry of its "params"; declare it there`, "value");
      }
    }
    for (const p of params) {
      if (!fields.includes(p)) {
        report(
          "BAD_KEY_TEMPLATE",
          [...s.path, "params", p],
          `parameter "${p}" of signal "${s.name}" is not used by its key "${s.keyTemplate}"; use it as {${p}} or remove it`,
        );
      }
      const ps = resolve(((s.params["properties"] ?? {}) as Record<string, JsonSchema>)[p], pkg);
      if (ps !== undefined && !isScalar(ps)) {
        report("BAD_KEY_TEMPLATE", [...s.path, "params", p], `parameter "${p}" of signal "${s.name}" must be a string, number or boolean to be part of a key`);
      }
    }
  }

  // Identifier collisions after case conversion: each generated name must come from one spec name.
  const claims = new Map<string, string>();
  const reported = new Set<string>();
  const claim = (generated: string, origin: string, path: SpecPath) => {
    const previous = claims.get(generated);
    if (previous !== undefined && previous !== origin) {
      // One report per pair of clashing entries, naming the first identifier they share.
      if (reported.has(`${previous}|${origin}`)) return;
      reported.add(`${previous}|${origin}`);
      report("NAME_COLLISION", path, `${origin} and ${previous} both become "${generated}" in TypeScript; rename one of them`);
    } else {
      claims.set(generated, origin);
    }
  };
  claim(`${pkg.typeName}Headers`, "the package's headers", ["package"]);
  for (const reserved of ["Client", "JobsClient", "SignalsClient", "WorkflowsClient", "SubmitOptions", "Handlers", "WorkflowHandlers"]) {
    claims.set(reserved, `the generated "${reserved}"`);
  }
  claims.set("signalsJob", "the client's signals");
  for (const t of pkg.types) claim(t.name, `type "${t.name}"`, t.path);
  for (const j of pkg.jobs) {
    const o = `job "${j.name}"`;
    for (const suffix of ["Input", "Output", "Error", "Handler", "Context", "Job"]) claim(`${j.typeName}${suffix}`, o, j.path);
    claim(`${j.ident}Job`, o, j.path);
    if (j.ident === "signals") claim("signalsJob", o, j.path);
  }
  for (const s of pkg.signals) {
    const o = `signal "${s.name}"`;
    for (const suffix of ["SignalParams", "SignalPayload", "Signal"]) claim(`${s.typeName}${suffix}`, o, s.path);
    claim(`${s.ident}Signal`, o, s.path);
  }
  const headerIdents = new Map<string, string>();
  for (const h of pkg.headers) {
    const previous = headerIdents.get(h.ident);
    if (previous !== undefined) report("NAME_COLLISION", h.path, `headers "${h.name}" and "${previous}" both become "${h.ident}"; rename one of them`);
    headerIdents.set(h.ident, h.name);
  }

  // Workflows.
  const signalNames = new Set(pkg.signals.map((s) => s.name));
  // Jobs and workflows are members of one client object (clashes among jobs, or among workflows, are caught above).
  const jobMembers = new Map(pkg.jobs.map((j) => [j.ident, j.name]));
  for (const w of pkg.workflows) {
    const o = `workflow "${w.name}"`;
    const job = jobMembers.get(w.ident);
    if (job !== undefined) report("NAME_COLLISION", w.path, `${o} and job "${job}" are both "${w.ident}" on the client; rename one of them`);
    if (w.ident === "signals") report("NAME_COLLISION", w.path, `${o} would be "signals" on the client, which holds the signal senders; rename it`);
    for (const suffix of ["Input", "Result", "Error", "Handler", "Client", "Workflow"]) claim(`${w.typeName}${suffix}`, o, w.path);
    claim(`${w.ident}Workflow`, o, w.path);
    const idents = new Map<string, string>();
    for (const s of w.steps) {
      const so = `step "${s.name}" of ${o}`;
      for (const suffix of ["Payload", "Next", "Context", "Transition"]) claim(`${w.typeName}${s.typeName}${suffix}`, so, s.path);
      const previous = idents.get(s.ident);
      if (previous !== undefined) report("NAME_COLLISION", s.path, `steps "${s.name}" and "${previous}" of ${o} both become "${s.ident}"; rename one of them`);
      idents.set(s.ident, s.name);
    }
    checkSteps(w, report, signalNames);
    checkChildRefs(w, pkg, report);
  }
  for (const sc of pkg.schedules) {
    claim(`${sc.ident}Schedule`, `schedule "${sc.name}"`, sc.path);
    if (sc.inputFromHandler) {
      claim(scheduleInputHandlerType(sc), `schedule "${sc.name}"`, sc.path);
      claim("ScheduleInputHandlers", "the input handlers of the schedules", sc.path);
    }
  }
  checkSchedules(pkg, report);
  checkFlowControl(pkg, report);
  return out;
}

/**
 * The child-run references of one workflow's steps: a workflow of this
 * package named under `starts` or `waits_for_child` exists (references to
 * other packages are checked once every spec is analysed: see
 * {@link foreignRefProblems}); a step waits for a child or a signal, not
 * both, with no timeout; the entry step waits for nothing.
 */
function checkChildRefs(w: WorkflowModel, pkg: PackageModel, report: Report): void {
  const own = new Set(pkg.workflows.map((x) => x.name));
  const known = [...own].sort().join(", ");
  for (const [i, s] of w.steps.entries()) {
    for (const ref of [...s.starts, ...(s.waitsForChild === undefined ? [] : [s.waitsForChild])]) {
      if (!ref.foreign && !own.has(ref.workflow)) {
        report(
          "UNKNOWN_WORKFLOW",
          ref.path,
          `step "${s.name}" of workflow "${w.name}" names workflow "${ref.workflow}", which package "${pkg.name}" does not declare; workflows: ${known}; name another package's as <package>:<workflow>`,
          "value",
        );
      }
    }
    if (s.waitsForChild === undefined) continue;
    if (i === 0) {
      report(
        "BAD_ENTRY_STEP",
        [...s.path, "waits_for_child"],
        `"${s.name}" is the entry step of workflow "${w.name}" (the first listed), which submit enters at once; it cannot wait for a child run, so list a step before it`,
      );
    }
    if (s.waitsFor !== undefined) {
      report(
        "BAD_CHILD_WAIT",
        [...s.path, "waits_for_child"],
        `step "${s.name}" waits for both a signal and a child run; a step is entered by one of them, so split it in two`,
      );
    }
  }
}

/**
 * The references to workflows of other packages, checked against every
 * package of the generation: the package and its workflow must be there.
 */
export function foreignRefProblems(pkg: PackageModel, all: readonly PackageModel[], report: Report): void {
  const byName = new Map(all.map((p) => [p.name, p]));
  for (const w of pkg.workflows) {
    for (const s of w.steps) {
      for (const ref of [...s.starts, ...(s.waitsForChild === undefined ? [] : [s.waitsForChild])]) {
        if (!ref.foreign) continue;
        const other = byName.get(ref.package);
        if (other === undefined) {
          const names = [...byName.keys()]
            .filter((n) => n !== pkg.name)
            .sort()
            .join(", ");
          report(
            "UNKNOWN_WORKFLOW",
            ref.path,
            `step "${s.name}" of workflow "${w.name}" names package "${ref.package}", which no spec of this generation declares${names === "" ? "" : `; packages: ${names}`}; generate both specs together`,
            "value",
          );
        } else if (!other.workflows.some((x) => x.name === ref.workflow)) {
          report(
            "UNKNOWN_WORKFLOW",
            ref.path,
            `step "${s.name}" of workflow "${w.name}" names "${ref.workflow}", which package "${ref.package}" does not declare; workflows: ${other.workflows
              .map((x) => x.name)
              .sort()
              .join(", ")}`,
            "value",
          );
        }
      }
    }
  }
}

export type Report = (code: DiagnosticCode, path: SpecPath, message: string, at?: "key" | "value", severity?: "error" | "warning") => void;

/**
 * The step graph of one workflow: the entry step (the first listed) takes the
 * input and is entered by submit, every transition names a step, every wait
 * names a signal and has a timeout, and every step is reachable from the entry.
 */
function checkSteps(w: WorkflowModel, report: Report, signalNames: ReadonlySet<string>): void {
  const steps = new Map(w.steps.map((s) => [s.name, s]));
  const entry = w.steps[0];
  if (entry === undefined) return;
  if (entry.payload !== undefined) {
    report(
      "BAD_ENTRY_STEP",
      [...entry.path, "payload"],
      `"${entry.name}" is the entry step of workflow "${w.name}" (the first listed), so it receives the workflow input; remove its "payload" and describe the shape under the workflow's "input"`,
    );
  }
  if (entry.waitsFor !== undefined) {
    report(
      "BAD_ENTRY_STEP",
      [...entry.path, "waits_for"],
      `"${entry.name}" is the entry step of workflow "${w.name}" (the first listed), which submit enters at once; it cannot wait for a signal, so list a step before it`,
    );
  }
  for (const s of w.steps) {
    if (s.waitsFor !== undefined && !signalNames.has(s.waitsFor)) {
      const known = [...signalNames].sort().join(", ");
      report(
        "UNKNOWN_SIGNAL",
        [...s.path, "waits_for"],
        `step "${s.name}" waits for "${s.waitsFor}", which is not declared under "signals"${known === "" ? "; declare it" : `; known signals: ${known}`}`,
        "value",
      );
    }
    if (s.waitsFor !== undefined && s.timeoutMs === undefined) {
      report(
        "WAIT_WITHOUT_TIMEOUT",
        [...s.path, "waits_for"],
        `step "${s.name}" waits for a signal without "timeout_ms"; add one so a lost signal cannot park the run forever`,
      );
    }
    if (s.waitsFor === undefined && s.waitsForChild === undefined && s.timeoutMs !== undefined) {
      report(
        "TIMEOUT_WITHOUT_WAIT",
        [...s.path, "timeout_ms"],
        `step "${s.name}" has "timeout_ms" but waits for no signal or child run; add "waits_for" (or "waits_for_child") or remove the timeout`,
      );
    }
    s.next.forEach((n, i) => {
      if (!steps.has(n)) {
        report(
          "UNKNOWN_STEP",
          [...s.path, "next", i],
          `step "${s.name}" continues to "${n}", which is not a step of workflow "${w.name}"; steps: ${[...steps.keys()].join(", ")}`,
          "value",
        );
      }
    });
  }
  const reached = new Set([entry.name]);
  const queue = [entry];
  for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
    for (const n of s.next) {
      const t = steps.get(n);
      if (t !== undefined && !reached.has(n)) {
        reached.add(n);
        queue.push(t);
      }
    }
  }
  for (const s of w.steps) {
    if (!reached.has(s.name)) {
      report(
        "UNREACHABLE_STEP",
        s.path,
        `step "${s.name}" of workflow "${w.name}" is not reachable from the entry step "${entry.name}"; list it under some step's "next" or remove it`,
      );
    }
  }
}
