/**
 * @module The public shape of `inspectRun`: a run's history as its user
 * sees it, step by step, and the bounds that keep it small.
 *
 * Pure types and constants; the records behind it are `history-records.ts`.
 */
import type { WaitingReason } from "../../queue/types.js";
import type { RunErrorKind, TerminalStatus } from "./run-types.js";
import type { RunId } from "./run-id.js";
import type { RunRowState } from "./run-listing.js";

/** Attempts kept per step: the first one and the latest ones; `attemptsDropped` counts the rest. */
export const HISTORY_ATTEMPTS_PER_STEP = 20;
/** Steps kept per run: the latest ones; `stepsDropped` counts the older ones. */
export const HISTORY_STEPS_PER_RUN = 500;
/** Memo keys and KV effect keys kept per step; the counts say how many there were. */
export const HISTORY_KEYS_PER_STEP = 50;
/** Error text kept per attempt, in characters. */
export const HISTORY_ERROR_CHARS = 4096;
/** Stack trace kept per attempt, in characters. */
export const HISTORY_STACK_CHARS = 8192;

/**
 * How one claim of a step ended:
 * - `continued`, `succeeded`, `failed`, `cancelled`: the step settled so;
 * - `retried`: a transient error; the step runs again;
 * - `dead_lettered`: a permanent error, or the queue dead-lettered it;
 * - `put_back`: the store kept failing; run again without counting an attempt;
 * - `interrupted`: the claim ended without a settlement, because the process
 *   holding it stopped (found at the next open) or its lease expired. It
 *   counts as an attempt: the step runs again, or, when it was the last
 *   attempt, the queue dead-letters it and the run fails (`dead_lettered`).
 */
export type StepAttemptOutcome = "continued" | "succeeded" | "failed" | "cancelled" | "retried" | "dead_lettered" | "put_back" | "interrupted";

/** One claim of a step. */
export interface AttemptHistory {
  /** 1 for the first claim. */
  readonly attempt: number;
  /** When the worker claimed the step (epoch ms). */
  readonly startedAtMs: number;
  /** When its settlement committed. */
  readonly endedAtMs: number;
  readonly outcome: StepAttemptOutcome;
  /** The error text of a failed attempt (truncated to {@link HISTORY_ERROR_CHARS}). */
  readonly error?: string;
  /** Its stack trace, when the thrown value had one (truncated to {@link HISTORY_STACK_CHARS}). */
  readonly stack?: string;
}

/** What a continuing step chose for the next one. */
export type StepTransitionHistory =
  | { readonly kind: "immediate" }
  | { readonly kind: "after"; readonly delayMs: number; readonly runAtMs: number }
  | { readonly kind: "on_signal"; readonly key: string; readonly timeoutMs: number; readonly deadlineMs: number };

/** How a step that waited for a signal was woken. */
export interface SignalReceipt {
  readonly key: string;
  /** `delivered` with the payload's size, or `timed_out`. */
  readonly result: "delivered" | "timed_out";
  readonly payloadBytes?: number;
}

/** One step of a run. */
export interface StepHistory {
  readonly step: number;
  /** The step's name, for typed workflows. */
  readonly name?: string;
  /** Size of the payload the step ran with. */
  readonly payloadBytes: number;
  /** The attempts kept (see {@link HISTORY_ATTEMPTS_PER_STEP}), oldest first. */
  readonly attempts: readonly AttemptHistory[];
  /** Attempts left out of `attempts` to keep it bounded. */
  readonly attemptsDropped: number;
  /** The signal this step was woken by, when it waited for one. */
  readonly signal?: SignalReceipt;
  /** What the step chose when it continued. */
  readonly transition?: StepTransitionHistory;
  /** Memo keys the step wrote (step and run scope), at most {@link HISTORY_KEYS_PER_STEP}. */
  readonly memoKeys: readonly string[];
  readonly memoKeysWritten: number;
  /** Caller KV keys the step's settlement put and deleted, at most {@link HISTORY_KEYS_PER_STEP} each. */
  readonly kvPuts: readonly string[];
  readonly kvDeletes: readonly string[];
  readonly kvEffects: number;
  /** Whether the step's payload is kept, so `retryRun({ fromStep })` can start here. */
  readonly retryable: boolean;
  /** The current step of an active run has not settled: the claim a worker holds now, if any. */
  readonly inProgress?: { readonly attempt: number; readonly startedAtMs: number };
  /** The current step of an active run waits: for a signal (key and deadline) or for its time. */
  readonly waiting?: { readonly signalKey?: string; readonly untilMs: number };
  /** Flow control holding the step back (a full concurrency key, a rate limit, a debounce window), while it does. */
  readonly heldBy?: WaitingReason;
}

/** How the run ended. */
export interface RunEndHistory {
  readonly status: TerminalStatus;
  readonly error?: string;
  readonly errorKind?: RunErrorKind;
  /** The run that replaced this one before it started (`errorKind: "superseded"`). */
  readonly supersededBy?: RunId;
  readonly finalStep: number;
  readonly atMs: number;
}

/** A redrive of the run (`retryRun`, `retryJob`, a dead step requeued). */
export interface RedriveHistory {
  /** The step the run was re-opened at. */
  readonly step: number;
  readonly atMs: number;
  /** The end the redrive replaced. */
  readonly replaced: RunEndHistory;
}

/** What `inspectRun` reports: the run's state and the steps it went through, oldest first. */
export interface RunHistory {
  readonly runId: RunId;
  readonly workflow?: string;
  readonly kind?: "workflow" | "job";
  /** The run that started this one as a child run, and the step that started it. */
  readonly parent?: { readonly runId: string; readonly step: number };
  readonly state: RunRowState;
  readonly submittedAtMs: number;
  /**
   * The memo set of this submission of the run id: pass it to
   * `MemoStore.newMemo` or `runMemo` to read the run's memo entries from
   * outside a step. Absent for a run submitted before memo sets existed
   * (its entries are read without one).
   */
  readonly memoSet?: string;
  /**
   * This submission of the run id, drawn when it was submitted and kept by
   * `retryRun`: a child whose first id a child of another run under the
   * parent's id holds is named with it (see `childRunId`). Absent for a run
   * submitted before runs stored one; a run submitted before it was drawn
   * holds its first step's job id.
   */
  readonly submission?: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly steps: readonly StepHistory[];
  /** Older steps left out (see {@link HISTORY_STEPS_PER_RUN}). */
  readonly stepsDropped: number;
  /** Earlier ends that redrives replaced, oldest first (at most {@link HISTORY_ATTEMPTS_PER_STEP}). */
  readonly redrives: readonly RedriveHistory[];
  /** The run's end; absent while it is active. */
  readonly end?: RunEndHistory;
}
