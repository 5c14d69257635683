/**
 * @module The checks of a package's `schedules:` the meta-schema cannot
 * make: the cron expression and timezone (read the way the runtime reads
 * them), the target job or workflow, the input (fixed, checked against the
 * target's input schema, or `input_from: handler`; one of them), the
 * headers against the package's headers, and no `jitter_ms` for a target
 * that is debounced (its run starts when the debounce window ends).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { cronProblem } from "../../runtime/workflow/schedules/cron-times.js";
import { jsonSchemaFormats } from "../../runtime/contract/json-schema-formats.js";
import { selfContained } from "../emit/compile-validators.js";
import type { Report } from "./check-spec.js";
import type { JsonSchema, PackageModel, ScheduleModel } from "./spec-model.js";

export function checkSchedules(pkg: PackageModel, report: Report): void {
  for (const sc of pkg.schedules) {
    const o = `schedule "${sc.name}"`;
    const problem = cronProblem(sc.cron, sc.timezone);
    if (problem !== undefined) {
      const timezoneAt = problem.includes("timezone");
      report("BAD_CRON", [...sc.path, timezoneAt ? "timezone" : "cron"], `${o}: ${problem}`, "value");
    }
    const input = targetInput(sc, pkg, report);
    if (input !== undefined) checkInputSource(sc, input, pkg, report);
    checkHeaders(sc, pkg, report);
    checkJitter(sc, pkg, report);
  }
}

/** A debounced target starts its run when its window ends, so a tick's jitter would be lost (the runtime refuses it at upsert). */
function checkJitter(sc: ScheduleModel, pkg: PackageModel, report: Report): void {
  if (sc.jitterMs === 0 || sc.target === undefined || sc.bothTargets) return;
  const { kind, name } = sc.target;
  const target = kind === "workflow" ? pkg.workflows.find((w) => w.name === name) : pkg.jobs.find((j) => j.name === name);
  if (target?.flowControl?.debounce === undefined) return;
  report(
    "BAD_SCHEDULE",
    [...sc.path, "jitter_ms"],
    `schedule "${sc.name}" sets jitter_ms, but ${kind} "${name}" is debounced (its run starts when the debounce window ends, so a tick's jitter would be lost); remove jitter_ms, or the target's debounce`,
    "value",
  );
}

/** The target's input schema, or undefined after reporting why there is none. */
function targetInput(sc: ScheduleModel, pkg: PackageModel, report: Report): JsonSchema | undefined {
  const o = `schedule "${sc.name}"`;
  const raw = sc as { target: ScheduleModel["target"] };
  if (sc.bothTargets) {
    report("BAD_SCHEDULE", [...sc.path, "job"], `${o} names both a workflow and a job; a schedule starts one of them, so keep one`);
    return undefined;
  }
  if (raw.target === undefined) {
    report("BAD_SCHEDULE", sc.path, `${o} names no target; add "workflow: <name>" or "job: <name>" of this package`);
    return undefined;
  }
  const { kind, name } = raw.target;
  const found = kind === "workflow" ? pkg.workflows.find((w) => w.name === name)?.input : pkg.jobs.find((j) => j.name === name)?.input;
  if (found === undefined) {
    const known = (kind === "workflow" ? pkg.workflows : pkg.jobs).map((x) => x.name).sort();
    report(
      "UNKNOWN_TARGET",
      [...sc.path, kind],
      `${o} starts ${kind} "${name}", which this package does not declare${known.length === 0 ? "" : `; its ${kind}s: ${known.join(", ")}`}`,
      "value",
    );
  }
  return found;
}

/** Exactly one of a fixed input and `input_from: handler`; a target taking `null` may go without either. */
function checkInputSource(sc: ScheduleModel, schema: JsonSchema, pkg: PackageModel, report: Report): void {
  const o = `schedule "${sc.name}"`;
  if (sc.inputFromHandler) {
    if (sc.input !== undefined) {
      report(
        "BAD_SCHEDULE",
        [...sc.path, "input_from"],
        `${o} gives both a fixed input and input_from: handler; keep "input" for the same input every tick, or "input_from" to compute it per tick`,
      );
    }
    return;
  }
  const validate = compiled(schema, pkg);
  if (sc.input === undefined) {
    if (!validate(null)) {
      const target = `${sc.target?.kind} "${sc.target?.name}"`;
      report("BAD_SCHEDULE", sc.path, `${o} gives no input, and ${target} requires one; add "input: ..." or "input_from: handler"`);
    }
    return;
  }
  checkInput(sc, sc.input, validate, report);
}

function compiled(schema: JsonSchema, pkg: PackageModel): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, strict: false, logger: false });
  for (const [name, fn] of Object.entries(jsonSchemaFormats)) ajv.addFormat(name, fn);
  return ajv.compile(selfContained(schema, pkg) as object);
}

function checkInput(sc: ScheduleModel, input: unknown, validate: ValidateFunction, report: Report): void {
  if (validate(input)) return;
  const target = `${sc.target?.kind} "${sc.target?.name}"`;
  for (const e of (validate.errors ?? []) as ErrorObject[]) {
    const segments = e.instancePath === "" ? [] : e.instancePath.slice(1).split("/").map(unescapePointer);
    const at = segments.length === 0 ? "the input" : `input.${segments.join(".")}`;
    report(
      "BAD_SCHEDULE",
      [...sc.path, "input", ...segments],
      `schedule "${sc.name}": ${at} ${e.message ?? "is invalid"} (the input schema of ${target})`,
      "value",
    );
  }
}

function checkHeaders(sc: ScheduleModel, pkg: PackageModel, report: Report): void {
  const declared = new Map(pkg.headers.map((h) => [h.name, h]));
  for (const name of Object.keys(sc.headers)) {
    if (!declared.has(name)) {
      const known = [...declared.keys()].sort().join(", ");
      report(
        "BAD_SCHEDULE",
        [...sc.path, "headers", name],
        `schedule "${sc.name}" sets header "${name}", which the package does not declare${known === "" ? "" : `; its headers: ${known}`}`,
      );
    }
  }
  for (const h of pkg.headers) {
    if (h.required && !Object.hasOwn(sc.headers, h.name)) {
      report("BAD_SCHEDULE", sc.path, `schedule "${sc.name}" lacks the required header "${h.name}"; set it under "headers"`);
    }
  }
}

function unescapePointer(s: string): string {
  return s.replace(/~1/g, "/").replace(/~0/g, "~");
}
