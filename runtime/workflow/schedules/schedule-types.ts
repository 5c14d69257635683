/**
 * @module The public shapes of schedules: what `runtime.schedules.upsert`
 * takes and what `list` reports.
 */
import type { RunDebounce, RunFlow, RunOptions } from "../runs/run-types.js";

/**
 * What a tick does while the schedule's previous run is still active:
 * `"skip"` drops the tick, `"buffer_one"` starts one run for the latest such
 * tick once the previous run ends (later ones are dropped), `"allow"` starts
 * it at once.
 */
export type OverlapPolicy = "skip" | "buffer_one" | "allow";

/**
 * Which ticks missed while no worker ran (downtime, or a scheduler that woke
 * more than {@link MISFIRE_GRACE_MS} late) still start a run: `"none"`,
 * `"last"` (only the latest one), or every one due within `allWithinMs`
 * before now.
 */
export type CatchUpPolicy = "none" | "last" | { readonly allWithinMs: number };

/** How late a tick may be seen and still count as on time rather than missed. */
export const MISFIRE_GRACE_MS = 60_000;

/** The tick a schedule's input handler computes the input of. */
export interface ScheduleTick {
  readonly scheduleId: string;
  /** The tick's cron time (without jitter), epoch ms. */
  readonly tickMs: number;
  /**
   * Aborts when the runtime stops waiting for this answer: at the runtime's
   * `scheduleInputTimeout` (reason: a `TimeoutError` `DOMException`) or
   * when its scheduler stops (shutdown; an `AbortError`). Pass it to the
   * handler's fetches and queries, so abandoned work stops too.
   */
  readonly signal: AbortSignal;
}

/**
 * Computes a tick's run input. Make it a function of the tick alone: a tick
 * decided again (after a crash before its state was written) computes it
 * again, and the first run submitted under the tick's run id is kept.
 */
export type ScheduleInputHandler = (tick: ScheduleTick) => Uint8Array | ComputedTickRun | Promise<Uint8Array | ComputedTickRun>;

/**
 * What an input handler may return instead of bare bytes: the input and the
 * flow control of this tick's run, for flow keys read from the computed
 * input (it replaces `options.flow` for this run).
 */
export interface ComputedTickRun {
  readonly input: Uint8Array;
  readonly flow?: RunFlow;
  /** The debounce window of this tick's run (replaces `options.debounce`; a scheduled tick only). */
  readonly debounce?: RunDebounce;
}

/** The run each tick starts: a fixed or computed input and the run's options (headers, priority, attempts). */
export interface ScheduledRun {
  /**
   * The input of every tick's run, or a handler computing it per tick. A
   * handler lives in the process: register the schedule (upsert) in every
   * process that runs a worker, at each start.
   */
  readonly input: Uint8Array | ScheduleInputHandler;
  /**
   * `runAt` is not allowed: the tick (plus jitter) sets it. `debounce`
   * applies to the runs of scheduled ticks (not to `trigger` and
   * `backfill`, which start their runs at once) and cannot be combined with
   * `jitterMs`.
   */
  readonly options?: Omit<RunOptions, "runAt">;
}

/** A schedule, as given to `runtime.schedules.upsert`. */
export interface ScheduleSpec {
  /** 1 to 64 characters of `[A-Za-z0-9_-]`; names the schedule and prefixes its run ids. */
  readonly id: string;
  /** 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first. */
  readonly cron: string;
  /** IANA timezone the cron fields are read in. Default: `"UTC"`. */
  readonly timezone?: string;
  readonly run: ScheduledRun;
  /** Default: `"skip"`. */
  readonly overlap?: OverlapPolicy;
  /** Default: `"none"`. */
  readonly catchUp?: CatchUpPolicy;
  /** Delays each tick's run by up to this many ms, the same delay for a tick in every process. Default: 0. */
  readonly jitterMs?: number;
}

/** A schedule and its state, as `runtime.schedules.list` reports it. */
export interface ScheduleInfo {
  readonly id: string;
  readonly cron: string;
  readonly timezone: string;
  readonly overlap: OverlapPolicy;
  readonly catchUp: CatchUpPolicy;
  readonly jitterMs: number;
  readonly paused: boolean;
  /** The next tick the scheduler will decide; null while paused or when the expression has no later date. */
  readonly nextTickMs: number | null;
  /** The latest tick decided (started, skipped or buffered); null before the first. */
  readonly lastTickMs: number | null;
  /** The run the schedule started last (by a tick or `trigger`); null before the first. */
  readonly lastRunId: string | null;
  /** A tick held by `buffer_one` until the previous run ends; null when none. */
  readonly bufferedTickMs: number | null;
  /** Whether each tick's input is computed by a handler. */
  readonly computedInput: boolean;
  /** The latest tick whose input handler failed (no run started), with the error; null when none. */
  readonly lastFailure: ScheduleFailure | null;
}

/** A tick that started no run because its input could not be computed. */
export interface ScheduleFailure {
  readonly tickMs: number;
  readonly error: string;
}

/** One run a schedule started (or found already started: `newlySubmitted: false`). */
export interface ScheduleFire {
  readonly tickMs: number;
  readonly runId: string;
  readonly newlySubmitted: boolean;
}
