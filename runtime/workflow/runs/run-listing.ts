/**
 * @module The public shapes of run listings: what `listRuns` takes and
 * returns on the runtime, the read-only view and `TaqubaClient`.
 *
 * Pure types and constants; the index that answers them is `run-index.ts`.
 */
import type { WaitingReason } from "../../queue/types.js";
import type { RunErrorKind } from "./run-types.js";
import type { RunId } from "./run-id.js";
import type { RunDamage } from "./run-damage.js";

/**
 * The states a listing reports and filters on:
 * - `pending`: the current step is claimable and waits for a worker;
 * - `running`: a worker holds the current step;
 * - `awaiting_signal`: the current step waits for a signal (see `RunRow.signal`);
 * - `scheduled`: the current step waits for its time (a delay or `runAt`);
 * - `cancelling`: a cancel was requested and the worker has not settled it yet;
 * - `succeeded`, `failed`, `cancelled`: the run ended.
 */
export const RUN_LIST_STATES = ["pending", "running", "awaiting_signal", "scheduled", "cancelling", "succeeded", "failed", "cancelled"] as const;

/** A state {@link RUN_LIST_STATES} names. */
export type RunListState = (typeof RUN_LIST_STATES)[number];

/**
 * The state of a listed run. Later versions may report more active states
 * (a run waiting for a concurrency slot, say): treat a value you do not
 * know as an active run.
 */
export type RunRowState = RunListState | (string & {});

/** The default and the largest `limit` of one listing page. */
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 1000;

/** What `listRuns` takes. Every field is optional; filters combine with AND. */
export interface ListRunsOptions {
  /** Only runs in this state. */
  readonly state?: RunListState;
  /** Only runs of this typed workflow (or typed job) name. */
  readonly workflow?: string;
  /** Only runs submitted at or after this instant (epoch ms). */
  readonly submittedAfter?: number;
  /** Only runs submitted before this instant (epoch ms). */
  readonly submittedBefore?: number;
  /** The `nextCursor` of the previous page, listed with the same filters. */
  readonly cursor?: string;
  /** Most rows in the page: 1 to {@link MAX_LIST_LIMIT}, default {@link DEFAULT_LIST_LIMIT}. */
  readonly limit?: number;
}

/** The signal a run's current step waits for. */
export interface RunSignalWait {
  /** The correlation key a `signal` call must name. */
  readonly key: string;
  /** When the wait times out (epoch ms) and the step runs without a signal. */
  readonly deadlineMs: number;
}

/** One run as a listing reports it. */
export interface RunRow {
  readonly runId: RunId;
  /** The typed workflow (or typed job) name; absent for runs of a plain `StepRunner`. */
  readonly workflow?: string;
  /** `"workflow"` or `"job"` for typed runs; absent for runs of a plain `StepRunner`. */
  readonly kind?: "workflow" | "job";
  readonly state: RunRowState;
  /** The current step of an active run, the final step of an ended one. */
  readonly step: number;
  /** The current (or final) step's name, for typed workflows. */
  readonly stepName?: string;
  /** Claims of the current step so far (0 before its first claim). */
  readonly attempt: number;
  /** While `awaiting_signal`: the key and the deadline. */
  readonly signal?: RunSignalWait;
  /** While `scheduled`: when the step becomes claimable (epoch ms). */
  readonly runAtMs?: number;
  /**
   * Why flow control holds the current step back, while it does: a full
   * concurrency key, a rate limit until a time, a debounce window. The
   * owner's listings see all three; a client's see debounce windows and
   * full concurrency keys of flow rules (see docs/flow-control.md).
   */
  readonly heldBy?: WaitingReason;
  /** When the run was submitted (epoch ms, the runtime's clock). */
  readonly submittedAtMs: number;
  /** The last change the listing can see: a step enqueued, claimed or retried, or the end. */
  readonly updatedAtMs: number;
  /** The submitter's headers (the reserved `workflow.*` ones excluded). */
  readonly headers: Readonly<Record<string, string>>;
  /** For an ended run that did not succeed: the error text and why it ended. */
  readonly error?: string;
  readonly errorKind?: RunErrorKind;
  /** The run that replaced this one before it started (`errorKind: "superseded"`). */
  readonly supersededBy?: RunId;
  /** The run group and member key, when the run is a group member. */
  readonly group?: { readonly id: string; readonly key: string };
  /** The run that started this one as a child run, and the step that started it. */
  readonly parent?: { readonly runId: string; readonly step: number };
}

/** A run the listing could not read (a damaged index entry or record); the other rows are still listed. */
export interface UnreadableRun {
  readonly runId: string;
  readonly reason: string;
  /** Which of the run's records is damaged and what is wrong with it, when a record failed its check (absent for other failures). */
  readonly damage?: RunDamage;
}

/** One page of a listing, newest submission first. */
export interface RunPage {
  readonly runs: readonly RunRow[];
  /**
   * Pass as `cursor` for the next page; absent when the listing is done. A
   * filtered page may hold fewer than `limit` rows (even none) while a
   * cursor follows: each page examines a bounded number of entries.
   */
  readonly nextCursor?: string;
  /** Entries skipped because they could not be read; absent when none. */
  readonly unreadable?: readonly UnreadableRun[];
}
