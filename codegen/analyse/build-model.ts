/**
 * @module Stage 3: turn a spec value that passed the meta-schema into the
 * frozen package model.
 *
 * Only shape-level normalisation happens here (sorting, identifiers, closing
 * objects); cross-reference checks live in `check-spec.ts`.
 */

import { camelCase, compareCodeUnits, pascalCase } from "../emit/names.js";
import {
  deepFreeze,
  type FlowControlModel,
  type HeaderModel,
  type JobModel,
  type JsonSchema,
  type JsonValue,
  type PackageModel,
  type ScheduleModel,
  type SignalModel,
  type StepModel,
  type TypeModel,
  type WorkflowModel,
  type WorkflowRefModel,
} from "./spec-model.js";
import type { SpecPath } from "./load-spec.js";

type Raw = Record<string, unknown>;

function entries(value: unknown): [string, Raw][] {
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value as Record<string, Raw>).sort(([a], [b]) => compareCodeUnits(a, b));
}

/** A `starts:` / `waits_for_child:` entry: `<workflow>` of package `pkg`, or `<package>:<workflow>`. */
function workflowRef(pkg: string, text: string, path: SpecPath): WorkflowRefModel {
  const i = text.indexOf(":");
  return i < 0
    ? { package: pkg, workflow: text, foreign: false, path }
    : { package: text.slice(0, i), workflow: text.slice(i + 1), foreign: text.slice(0, i) !== pkg, path };
}

function optionalString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function optionalNumber(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

/**
 * Copies a schema, closing every object that lists `properties` but says
 * nothing of `additionalProperties`: a misspelt field is then an error both
 * for the compiler and at run time, rather than silently carried along.
 */
export function normaliseSchema(schema: unknown): JsonSchema {
  const walk = (v: unknown): JsonValue => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== "object" || v === null) return v as JsonValue;
    const out: Record<string, JsonValue> = {};
    for (const [k, child] of Object.entries(v as Raw)) {
      // `default`, `const`, `enum` and `examples` hold data, not schemas.
      out[k] = k === "default" || k === "const" || k === "enum" || k === "examples" ? (child as JsonValue) : walkSchemaMember(k, child);
    }
    if (out["properties"] !== undefined && out["additionalProperties"] === undefined) out["additionalProperties"] = false;
    return out;
  };
  const walkSchemaMember = (key: string, v: unknown): JsonValue => {
    if (key === "properties" && typeof v === "object" && v !== null) {
      const props: Record<string, JsonValue> = {};
      for (const [name, s] of Object.entries(v as Raw)) props[name] = walk(s);
      return props;
    }
    return walk(v);
  };
  return walk(schema) as JsonSchema;
}

/** Builds the model of one package. `value` must have passed `validateSpec`. */
export function buildModel(file: string, value: unknown): PackageModel {
  const spec = value as Raw;
  const pkg = String(spec["package"]);

  const types: TypeModel[] = entries(spec["types"]).map(([name, s]) => ({
    kind: "type",
    name,
    schema: normaliseSchema(s),
    path: ["types", name],
  }));

  const headers: HeaderModel[] = entries(spec["headers"]).map(([name, h]) => {
    const { optional, sensitive, ...schema } = h;
    return {
      kind: "header",
      name,
      ident: camelCase(name),
      required: optional !== true,
      sensitive: sensitive === true,
      description: optionalString(h["description"]),
      schema: normaliseSchema(schema),
      path: ["headers", name],
    };
  });

  const signals: SignalModel[] = entries(spec["signals"]).map(([name, s]) => {
    const params = entries(s["params"]);
    return {
      kind: "signal",
      name,
      qualifiedName: `${pkg}.${name}`,
      ident: camelCase(name),
      typeName: pascalCase(name),
      description: optionalString(s["description"]),
      keyTemplate: String(s["key"]),
      params: normaliseSchema({
        type: "object",
        required: params.map(([p]) => p),
        properties: Object.fromEntries(params),
      }),
      payload: normaliseSchema(s["payload"]),
      path: ["signals", name],
    };
  });

  const jobs: JobModel[] = entries(spec["jobs"]).map(([name, j]) => ({
    kind: "job",
    name,
    qualifiedName: `${pkg}.${name}`,
    ident: camelCase(name),
    typeName: pascalCase(name),
    description: optionalString(j["description"]),
    input: normaliseSchema(j["input"]),
    output: normaliseSchema(j["output"]),
    error: j["error"] === undefined ? undefined : normaliseSchema(j["error"]),
    idempotencyKey: optionalString(j["idempotency_key"]),
    maxAttempts: optionalNumber(j["max_attempts"]),
    priority: optionalNumber(j["priority"]),
    flowControl: flowControlOf(j),
    path: ["jobs", name],
  }));

  const workflows: WorkflowModel[] = entries(spec["workflows"]).map(([name, w]) => ({
    kind: "workflow",
    name,
    qualifiedName: `${pkg}.${name}`,
    ident: camelCase(name),
    typeName: pascalCase(name),
    description: optionalString(w["description"]),
    input: normaliseSchema(w["input"]),
    result: normaliseSchema(w["result"]),
    error: w["error"] === undefined ? undefined : normaliseSchema(w["error"]),
    // Step order is meaningful (the first step is the entry), so it is kept.
    steps: Object.entries((w["steps"] ?? {}) as Record<string, Raw>).map(
      ([step, s]): StepModel => ({
        kind: "step",
        name: step,
        ident: camelCase(step),
        typeName: pascalCase(step),
        description: optionalString(s["description"]),
        payload: s["payload"] === undefined ? undefined : normaliseSchema(s["payload"]),
        waitsFor: optionalString(s["waits_for"]),
        timeoutMs: optionalNumber(s["timeout_ms"]),
        next: Array.isArray(s["next"]) ? (s["next"] as unknown[]).map(String) : [],
        starts: Array.isArray(s["starts"])
          ? (s["starts"] as unknown[]).map((r, i) => workflowRef(pkg, String(r), ["workflows", name, "steps", step, "starts", i]))
          : [],
        waitsForChild:
          typeof s["waits_for_child"] === "string" ? workflowRef(pkg, s["waits_for_child"], ["workflows", name, "steps", step, "waits_for_child"]) : undefined,
        path: ["workflows", name, "steps", step],
      }),
    ),
    flowControl: flowControlOf(w),
    path: ["workflows", name],
  }));

  const schedules: ScheduleModel[] = entries(spec["schedules"]).map(([name, sc]) => {
    const workflow = optionalString(sc["workflow"]);
    const job = optionalString(sc["job"]);
    const catchUp = sc["catch_up"];
    return {
      kind: "schedule",
      name,
      ident: camelCase(name.replace(/-/g, "_")),
      description: optionalString(sc["description"]),
      cron: String(sc["cron"]),
      timezone: optionalString(sc["timezone"]) ?? "UTC",
      // Both or neither is reported by the checks; the model keeps the workflow then.
      target: workflow !== undefined ? { kind: "workflow", name: workflow } : job !== undefined ? { kind: "job", name: job } : undefined,
      bothTargets: workflow !== undefined && job !== undefined,
      input: sc["input"] === undefined ? undefined : (sc["input"] as JsonValue),
      inputFromHandler: sc["input_from"] === "handler",
      headers: (sc["headers"] ?? {}) as Record<string, string>,
      overlap: (optionalString(sc["overlap"]) ?? "skip") as ScheduleModel["overlap"],
      catchUp:
        typeof catchUp === "object" && catchUp !== null
          ? { allWithinMs: Number((catchUp as Raw)["all_within_ms"]) }
          : ((optionalString(catchUp) ?? "none") as "none" | "last"),
      jitterMs: optionalNumber(sc["jitter_ms"]) ?? 0,
      priority: optionalNumber(sc["priority"]),
      maxAttempts: optionalNumber(sc["max_attempts"]),
      path: ["schedules", name],
    };
  });

  return deepFreeze({
    kind: "package",
    file,
    name: pkg,
    ident: camelCase(pkg),
    typeName: pascalCase(pkg),
    description: optionalString(spec["description"]),
    types,
    headers,
    signals,
    jobs,
    workflows,
    schedules,
  });
}

/** The `concurrency`, `rate_limit` and `debounce` of a job or workflow entry, as written (the checks judge them). */
function flowControlOf(entry: Raw): FlowControlModel | undefined {
  const c = entry["concurrency"] as Raw | undefined;
  const r = entry["rate_limit"] as Raw | undefined;
  const d = entry["debounce"] as Raw | undefined;
  if (c === undefined && r === undefined && d === undefined) return undefined;
  return {
    concurrency: c === undefined ? undefined : { limit: Number(c["limit"]), key: optionalString(c["key"]) },
    rateLimit: r === undefined ? undefined : { limit: Number(r["limit"]), periodMs: Number(r["period_ms"]), key: optionalString(r["key"]) },
    debounce: d === undefined ? undefined : { periodMs: Number(d["period_ms"]), key: String(d["key"]) },
  };
}
