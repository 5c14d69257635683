/**
 * @module taquba: durable execution for TypeScript on object storage.
 *
 * Everything users import comes from here. Grouped by layer, top to bottom.
 */

// Errors and time
export * from "./errors.js";
export * from "./clock.js";

// Object stores
export type * from "./store/object-store.js";
export { MemoryStore } from "./store/memory-store.js";
export { validateObjectKey, compareKeys } from "./store/keys.js";
export { withFaults, InjectedFaultError } from "./store/with-faults.js";
export type { FaultOptions, FaultyStore, StoreOperation } from "./store/with-faults.js";
export { withLatency } from "./store/with-latency.js";
export type { LatencyOptions } from "./store/with-latency.js";
export { withCounting } from "./store/with-counting.js";
export type { CountingStore, StoreCounts } from "./store/with-counting.js";

// Engine
export { Engine } from "./engine/engine.js";
export type { EngineOptions, ScanOptions, CommitOptions } from "./engine/engine.js";
export { WriteBatch } from "./engine/write-batch.js";

// Jobs
export { createValidator, formatIssue } from "./jobs/validator.js";
export type {
  Validator,
  ValidationIssue,
  RawValidateFunction,
  RawValidationError,
  StandardSchemaV1,
  StandardSchemaResult,
  StandardSchemaIssue,
} from "./jobs/validator.js";
export { jsonSchemaFormats, validatorRuntime } from "./jobs/json-schema-formats.js";
export { defineJob, defineSignal, defineHeaders, compileKeyTemplate, JobFailure } from "./jobs/job-definition.js";
export type {
  HeaderValues,
  HeaderSetDefinition,
  JobDefinition,
  SignalDefinition,
  JobOutcome,
  JobHandle,
  JobSubmitOptions,
  JobSubmitter,
  SignalDelivery,
  SignalSender,
  JobContext,
  JobHandler,
  JobRegistrar,
} from "./jobs/job-definition.js";
