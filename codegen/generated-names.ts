/**
 * @module The identifiers generated code uses for each model entry.
 *
 * Kept in one place so the emitters and the collision check agree.
 */

import type { JobModel, PackageModel, SignalModel } from "./spec-model.js";

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
