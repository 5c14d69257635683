/**
 * @module The identifiers generated code uses for each model entry.
 *
 * Kept in one place so the emitters and the collision check agree.
 */

import type { JobModel, PackageModel, SignalModel, StepModel, WorkflowModel } from "../analyse/spec-model.js";

/** The package entry generated code imports from: one small, stable surface (see runtime/generated.ts). */
export const RUNTIME_MODULE = "taquba/generated";

export const headersType = (pkg: PackageModel): string => `${pkg.typeName}Headers`;

export const jobNames = (job: JobModel) => ({
  input: `${job.typeName}Input`,
  output: `${job.typeName}Output`,
  /** The error type, or `never` when the job declares none (then `ctx.fail` cannot be called). */
  error: job.error === undefined ? "never" : `${job.typeName}Error`,
  definition: `${job.ident}Job`,
  handler: `${job.typeName}Handler`,
  context: `${job.typeName}Context`,
});

export const signalNames = (signal: SignalModel) => ({
  params: `${signal.typeName}SignalParams`,
  payload: `${signal.typeName}SignalPayload`,
  definition: `${signal.ident}Signal`,
});

/** The name of the precompiled validator of a generated type. */
export const validatorName = (typeName: string): string => `validate${typeName}`;

export const workflowNames = (workflow: WorkflowModel) => ({
  input: `${workflow.typeName}Input`,
  result: `${workflow.typeName}Result`,
  /** The error type, or `never` when the workflow declares none (then `ctx.fail` cannot be called). */
  error: workflow.error === undefined ? "never" : `${workflow.typeName}Error`,
  definition: `${workflow.ident}Workflow`,
  definitionType: `${workflow.typeName}Workflow`,
  handler: `${workflow.typeName}Handler`,
  client: `${workflow.typeName}Client`,
});

/** The entry step: the first step listed. */
export const entryStep = (workflow: WorkflowModel): StepModel | undefined => workflow.steps[0];

export const stepNames = (workflow: WorkflowModel, step: StepModel) => {
  const prefix = `${workflow.typeName}${step.typeName}`;
  return {
    /** The payload type: the workflow input for the entry step, `null` for a step declaring none. */
    payload: step === entryStep(workflow) ? `${workflow.typeName}Input` : step.payload === undefined ? "null" : `${prefix}Payload`,
    /** Whether the step has a payload type of its own to declare and validate. */
    ownPayload: step !== entryStep(workflow) && step.payload !== undefined,
    next: `${prefix}Next`,
    context: `${prefix}Context`,
    transition: `${prefix}Transition`,
  };
};

/** The type of a schedule's input handler (`input_from: handler`), e.g. `NightlyScheduleInputHandler`. */
export function scheduleInputHandlerType(sc: { readonly ident: string }): string {
  return `${sc.ident.charAt(0).toUpperCase()}${sc.ident.slice(1)}ScheduleInputHandler`;
}
