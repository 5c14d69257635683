/**
 * @module taquba/generated: what code written by `taquba codegen` imports.
 *
 * Generated files import only from this entry, so the generator and the
 * runtime agree on one small surface: definition builders, validators and
 * the helpers behind typed clients and handlers. Applications have no need
 * for it; the `define*` builders are also exported from the package root.
 */
export { createValidator } from "./contract/validator.js";
export type { Validator, RawValidateFunction } from "./contract/validator.js";
export { jsonSchemaFormats, validatorRuntime } from "./contract/json-schema-formats.js";
export {
  defineJob,
  defineSignal,
  defineHeaders,
  compileKeyTemplate,
  validatingHandler,
  requireSubmitter,
  requireSignalSender,
} from "./contract/job-definition.js";
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
} from "./contract/job-definition.js";
export type { SubmitOutcome } from "./workflow/runs/run-types.js";
export { defineWorkflow } from "./contract/workflow-definition.js";
export { bindScheduleInput, defineSchedule } from "./typed/schedule-definition.js";
export type { ScheduleDefinition, ScheduleInputTick, TypedScheduleInputHandler } from "./typed/schedule-definition.js";
export type { WorkflowDefinition } from "./contract/workflow-definition.js";
export { checkContracts } from "./typed/contract-guard.js";
export { encodeStepEnvelope, decodeStepEnvelope, isStepEnvelope } from "./contract/step-envelope.js";
export type { StepEnvelope } from "./contract/step-envelope.js";
export type { StepTransition, Continuation, SignalContinuation, ChildContinuation } from "./contract/step-transition.js";
export type { ChildWorkflow, ChildOutcome, ChildWait, ChildOutcomeOf, ChildOutcomeOrTimeoutOf, ChildWaitTimedOut } from "./typed/child-workflows.js";
export type { WorkflowStepContext } from "./typed/step-context.js";
export type { WorkflowRegistrar } from "./typed/workflow-dispatcher.js";
export { workflowClient, requireWorkflowHost } from "./typed/workflow-client.js";
export type { WorkflowHost, WorkflowSubmitOptions, WorkflowClient } from "./typed/workflow-client.js";
