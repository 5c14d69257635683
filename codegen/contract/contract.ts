/**
 * @module The canonical contract of a job or signal and its hash.
 *
 * A contract is what producers and workers must agree on: schemas with the
 * shared types they reach inlined, the header set, and the key templates.
 * It is serialised with sorted keys, so the hash changes exactly when the
 * contract does, whatever the YAML's order or layout.
 */

import { createHash } from "node:crypto";
import { selfContained } from "../emit/compile-validators.js";
import { canonicalJson } from "./canonical-json.js";
import type { JobModel, JsonValue, PackageModel, SignalModel, WorkflowModel } from "../analyse/spec-model.js";

export { canonicalJson };

/** The header set as contracts see it. */
function headerContract(pkg: PackageModel): JsonValue {
  return pkg.headers.map((h) => ({ name: h.name, required: h.required, schema: h.schema }));
}

/** The normalised contract of a job. */
export function jobContract(job: JobModel, pkg: PackageModel): JsonValue {
  return {
    name: job.qualifiedName,
    input: selfContained(job.input, pkg),
    output: selfContained(job.output, pkg),
    error: job.error === undefined ? null : selfContained(job.error, pkg),
    headers: headerContract(pkg),
    idempotencyKey: job.idempotencyKey ?? null,
  };
}

/** The normalised contract of a signal. */
export function signalContract(signal: SignalModel, pkg: PackageModel): JsonValue {
  return {
    name: signal.qualifiedName,
    key: signal.keyTemplate,
    params: selfContained(signal.params, pkg),
    payload: selfContained(signal.payload, pkg),
  };
}

/** The normalised contract of a workflow: its schemas, step graph and waits, in step order (the first is the entry). */
export function workflowContract(workflow: WorkflowModel, pkg: PackageModel): JsonValue {
  return {
    name: workflow.qualifiedName,
    input: selfContained(workflow.input, pkg),
    result: selfContained(workflow.result, pkg),
    error: workflow.error === undefined ? null : selfContained(workflow.error, pkg),
    headers: headerContract(pkg),
    steps: workflow.steps.map((s) => ({
      name: s.name,
      payload: s.payload === undefined ? null : selfContained(s.payload, pkg),
      waitsFor: s.waitsFor ?? null,
      // Only when set, so the contracts of workflows without children keep their hashes.
      ...(s.waitsForChild === undefined ? {} : { waitsForChild: `${s.waitsForChild.package}.${s.waitsForChild.workflow}` }),
      next: [...s.next],
    })),
  };
}

/** A short, stable hash of a contract (the first 16 hex digits of its SHA-256). */
export function contractHash(contract: JsonValue): string {
  return createHash("sha256").update(canonicalJson(contract)).digest("hex").slice(0, 16);
}
