/**
 * @module The checks of a job's or workflow's `concurrency`,
 * `rate_limit` and `debounce` the meta-schema cannot make: limits within what the runtime
 * accepts, and key templates whose placeholders name a required header of
 * the package or a required scalar field of the input (never both).
 */
import { keyTemplateProblem, templateFields } from "../../runtime/contract/key-template.js";
import { fieldProblem, resolve, type Report } from "./check-spec.js";
import type { SpecPath } from "./load-spec.js";
import type { FlowControlModel, JsonSchema, PackageModel } from "./spec-model.js";

/** The runtime's bounds (runtime/queue/admission.ts), so a spec the generator accepts also opens. */
const MAX_CONCURRENCY = 1_000_000;
const MAX_RATE = 100_000;
const MAX_PERIOD_MS = 31_536_000_000;
/** `MAX_DEBOUNCE_MS` of runtime/queue/admission.ts. */
const MAX_DEBOUNCE_MS = 86_400_000;

export function checkFlowControl(pkg: PackageModel, report: Report): void {
  for (const j of pkg.jobs) if (j.flowControl !== undefined) checkOne(`job "${j.name}"`, j.flowControl, j.input, j.path, pkg, report);
  for (const w of pkg.workflows) if (w.flowControl !== undefined) checkOne(`workflow "${w.name}"`, w.flowControl, w.input, w.path, pkg, report);
}

function checkOne(owner: string, f: FlowControlModel, input: JsonSchema, path: SpecPath, pkg: PackageModel, report: Report): void {
  const bound = (what: string, at: SpecPath, n: number, max: number) => {
    if (!Number.isInteger(n) || n < 1 || n > max) {
      report("BAD_FLOW_CONTROL", at, `${what} of ${owner} must be an integer from 1 to ${max}, got ${String(n)}`, "value");
    }
  };
  if (f.concurrency !== undefined) {
    const at = [...path, "concurrency"];
    bound("concurrency.limit", [...at, "limit"], f.concurrency.limit, MAX_CONCURRENCY);
    if (f.concurrency.key !== undefined) checkKey(`concurrency key of ${owner}`, f.concurrency.key, [...at, "key"], input, pkg, report);
  }
  if (f.rateLimit !== undefined) {
    const at = [...path, "rate_limit"];
    bound("rate_limit.limit", [...at, "limit"], f.rateLimit.limit, MAX_RATE);
    bound("rate_limit.period_ms", [...at, "period_ms"], f.rateLimit.periodMs, MAX_PERIOD_MS);
    if (f.rateLimit.key !== undefined) checkKey(`rate-limit key of ${owner}`, f.rateLimit.key, [...at, "key"], input, pkg, report);
  }
  if (f.debounce !== undefined) {
    const at = [...path, "debounce"];
    bound("debounce.period_ms", [...at, "period_ms"], f.debounce.periodMs, MAX_DEBOUNCE_MS);
    checkKey(`debounce key of ${owner}`, f.debounce.key, [...at, "key"], input, pkg, report);
  }
}

function checkKey(what: string, template: string, at: SpecPath, input: JsonSchema, pkg: PackageModel, report: Report): void {
  const ambiguity = keyTemplateProblem(template);
  if (ambiguity !== undefined) report("BAD_KEY_TEMPLATE", at, `${what}: ${ambiguity}`, "value");
  const inputProps = (resolve(input, pkg)?.["properties"] ?? {}) as Record<string, JsonSchema>;
  for (const field of templateFields(template)) {
    const header = field.includes(".") ? undefined : pkg.headers.find((h) => h.name === field);
    const inInput = Object.hasOwn(inputProps, field.split(".")[0]!);
    if (header !== undefined && inInput) {
      report(
        "BAD_KEY_TEMPLATE",
        at,
        `${what}: "{${field}}" names both a header of the package and a field of the input; rename one of them so the key says which it reads`,
        "value",
      );
    } else if (header !== undefined) {
      if (!header.required) {
        report(
          "BAD_KEY_TEMPLATE",
          at,
          `${what}: header "${field}" is optional, so the key could not always be built; make it required or key on another field`,
          "value",
        );
      }
    } else {
      const problem = fieldProblem(input, field, pkg);
      if (problem === undefined) continue;
      const headers = pkg.headers.map((h) => h.name).sort();
      const known = problem.includes("names no declared field") && headers.length > 0 ? `; the package's headers: ${headers.join(", ")}` : "";
      report(
        "BAD_KEY_TEMPLATE",
        at,
        `${what}: ${problem.includes("names no declared field") ? `"{${field}}" names no header of the package and no field of the input` : `${problem} of its input`}${known}`,
        "value",
      );
    }
  }
}
