/**
 * @module Schedules on a sharded deployment: which runtime decides a
 * schedule's ticks, and how it reaches a run that lives on another shard.
 * The cluster layer implements it (`routeShardSchedules`); a runtime
 * without routing decides every schedule it holds and runs every tick on
 * its own queue.
 */
import type { RunSpec, RunStatus, SubmitOutcome } from "../runs/run-types.js";

/** The runs of another shard, as the deciding runtime reaches them (through that shard's owner). */
export interface RemoteRuns {
  /** Submits through the shard's owner; idempotent on (run id, input) as `runtime.submit`. */
  submit(spec: RunSpec): Promise<SubmitOutcome>;
  /** The run's status as of that shard's last durable commit; null when it has no record. */
  status(runId: string): Promise<RunStatus | null>;
}

/** Where a runtime's schedules tick and where their runs go. */
export interface ScheduleRouting {
  /** Whether this runtime decides the ticks of schedule `scheduleId` (it is on the schedule's home shard). */
  decides(scheduleId: string): boolean;
  /** The shard holding run `runId` when it is not this runtime's own; undefined for its own. */
  runsOf(runId: string): RemoteRuns | undefined;
}

/** A run on another shard could not be reached (its owner is down, or slow); the tick is decided again later. */
export class RemoteRunsUnavailable extends Error {
  constructor(
    readonly runId: string,
    override readonly cause: unknown,
  ) {
    super(`the shard of run "${runId}" did not answer: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "RemoteRunsUnavailable";
  }
}
