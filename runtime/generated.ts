/**
 * @module taquba/generated: what code written by `taquba codegen` imports.
 *
 * Generated files import only from this entry, so the generator and the
 * runtime agree on one small surface: definition builders, validators and
 * the helpers behind typed clients and handlers. Applications have no need
 * for it; the `define*` builders are also exported from the package root.
 */
export { createValidator } from "./jobs/validator.js";
export type { Validator, RawValidateFunction } from "./jobs/validator.js";
export { jsonSchemaFormats, validatorRuntime } from "./jobs/json-schema-formats.js";
export {
  defineJob,
  defineSignal,
  defineHeaders,
  compileKeyTemplate,
  validatingHandler,
  requireSubmitter,
  requireSignalSender,
} from "./jobs/job-definition.js";
export type {
  HeaderSetDefinition,
  JobDefinition,
  SignalDefinition,
  JobHandle,
  JobSubmitOptions,
  JobSubmitter,
  SignalDelivery,
  SignalSender,
  JobContext,
  JobRegistrar,
} from "./jobs/job-definition.js";
export type { SubmitOutcome } from "./workflow/run-types.js";
export { defineWorkflow } from "./workflow/typed/workflow-definition.js";
export type { WorkflowDefinition } from "./workflow/typed/workflow-definition.js";
export { checkContracts } from "./workflow/typed/contract-guard.js";
export { encodeStepEnvelope, decodeStepEnvelope, isStepEnvelope } from "./workflow/typed/step-envelope.js";
export type { StepEnvelope } from "./workflow/typed/step-envelope.js";
export type { StepTransition, Continuation, SignalContinuation } from "./workflow/typed/step-transition.js";
export type { WorkflowStepContext } from "./workflow/typed/step-context.js";
export type { WorkflowRegistrar } from "./workflow/typed/workflow-dispatcher.js";
export { workflowClient, requireWorkflowHost } from "./workflow/typed/workflow-client.js";
export type { WorkflowHost, WorkflowSubmitOptions, WorkflowClient } from "./workflow/typed/workflow-client.js";
