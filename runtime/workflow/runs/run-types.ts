/**
 * @module The shapes a caller observes of a run: its outcome, status and end.
 */
import type { SettlementEffects } from "../../queue/effects.js";
import type { RunId } from "./run-id.js";

/** How a run ended. */
export type TerminalStatus = "succeeded" | "failed" | "cancelled";

/**
 * Why a run that did not succeed ended:
 * - `runner`: the runner returned `fail` or `cancel` (its reason is the error);
 * - `transient`: a transient step error exhausted the step's attempts;
 * - `permanent`: a permanent step error dead-lettered the step;
 * - `cancelled`: `WorkflowRuntime.cancel` cancelled it from outside;
 * - `dead_lettered`: the queue dead-lettered its step outside the worker
 *   (lease expiry past the attempt limit, recovery on open);
 * - `superseded`: a later submission with the same debounce key replaced
 *   the run before its first step started (status `cancelled`,
 *   `supersededBy` names that run; see `RunOptions.debounce`).
 */
export type RunErrorKind = "runner" | "transient" | "permanent" | "cancelled" | "dead_lettered" | "superseded";

/** The state of a run that has not terminated. */
export type ActiveRunState = "pending" | "running" | "cancelling";
/** Every state {@link RunStatus} reports. */
export type RunState = ActiveRunState | "terminated";

/** A run's termination, read from its durable terminal record. */
export interface Termination {
  readonly runId: RunId;
  readonly status: TerminalStatus;
  /** The runner's reason or the step error's text; absent on success and on an external cancel. */
  readonly error?: string;
  readonly errorKind?: RunErrorKind;
  /** The step that terminated the run. */
  readonly finalStep: number;
  /** When the terminating settlement committed, by the runtime's clock. */
  readonly terminatedAtMs: number;
  /** The run that replaced this one (`errorKind: "superseded"`, see `RunOptions.debounce`). */
  readonly supersededBy?: RunId;
}

/**
 * A run's status. `step` is the current step of an active run and the final
 * step of a terminated one.
 */
export type RunStatus =
  | { readonly runId: RunId; readonly state: ActiveRunState; readonly step: number }
  | (Termination & { readonly state: "terminated"; readonly step: number });

/**
 * The committed outcome of a terminated run, as the terminal hook and
 * `WorkflowRuntime.outcome` see it.
 */
export interface RunOutcome {
  readonly runId: RunId;
  readonly status: TerminalStatus;
  /** The runner's result on success. */
  readonly result?: Uint8Array;
  readonly error?: string;
  readonly errorKind?: RunErrorKind;
  /**
   * What the application chose to expose about a failing step error
   * (`StepError`'s `publicMessage`); the raw `error` text is for operators.
   */
  readonly publicError?: string;
  /** A stable code for the failure (`StepError`'s `publicCode`), when a step error ended the run. */
  readonly errorCode?: string;
  /** The submitter's headers (the reserved `workflow.*` ones excluded). */
  readonly headers: Readonly<Record<string, string>>;
  readonly finalStep: number;
  /** The run that replaced this one (`errorKind: "superseded"`, see `RunOptions.debounce`). */
  readonly supersededBy?: RunId;
}

/**
 * What `WorkflowRuntime.wait` reports: the termination and the outcome
 * (see `WorkflowRuntime.outcome`; for a run ended without a worker, built
 * from its termination).
 */
export interface RunEnd {
  readonly termination: Termination;
  readonly outcome: RunOutcome | null;
  /**
   * Why `outcome` is null for a succeeded run (whose worker recorded one):
   * see {@link ResultUnavailableReason}. Absent otherwise.
   */
  readonly resultUnavailable?: ResultUnavailableReason;
}

/**
 * Why the result record of a run's end cannot be read: `"removed"`, it is
 * gone from the memo store (by `memoStore.clearMemosForRun`, by a memo
 * retention sweep clearing the run, or by the object store itself, e.g. a
 * lifecycle rule); `"damaged"`, it is stored but unreadable, or belongs to
 * another termination (a copied or overwritten object).
 */
export type ResultUnavailableReason = "removed" | "damaged";

/** Options shared by every step of a run. */
export interface RunOptions {
  /** Threaded through every step and reported on `RunOutcome.headers`; `workflow.*` is reserved. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Queue priority of every step (lower is claimed first). Default: the queue's. */
  readonly priority?: number;
  /** Attempt limit of every step. Default: the queue's. */
  readonly maxAttemptsPerStep?: number;
  /** Epoch ms before which the first step is not claimable. */
  readonly runAt?: number;
  /**
   * Flow control of every step of the run: the steps are claimed within the
   * limits of the flow rule `rule` (see `Queue.defineFlowRules`), per
   * `concurrencyKey` and `rateKey` (empty when absent: one key for the
   * rule). Generated clients set it from the spec's `concurrency` and
   * `rate_limit`. See docs/flow-control.md.
   */
  readonly flow?: RunFlow;
  /**
   * Debounce: of the runs submitted with this `key` within `periodMs`, the
   * last one wins. The first opens a window of `periodMs`; each later one
   * replaces the run waiting in it, in the same commit as its own
   * submission, and starts when the window ends. A replaced run ends
   * `cancelled` with `errorKind: "superseded"` and `supersededBy`, and
   * never runs a step. Only runs whose first step has not started are
   * replaced. Cannot be combined with `runAt`. See docs/flow-control.md.
   */
  readonly debounce?: RunDebounce;
}

/** `RunOptions.debounce`. */
export interface RunDebounce {
  /** 1 to 512 bytes of text; runs of one runtime's step queue with the same key share a window. */
  readonly key: string;
  /** Length of a window, from its first submission: 1 ms to a day. */
  readonly periodMs: number;
}

/** `RunOptions.flow`. */
export interface RunFlow {
  /** The flow rule, e.g. a typed job's or workflow's qualified name. */
  readonly rule: string;
  readonly concurrencyKey?: string;
  readonly rateKey?: string;
}

/** A submission. */
export interface RunSpec {
  /** The payload of step 0. */
  readonly input: Uint8Array;
  /** The run id; a ULID when absent. */
  readonly runId?: RunId | string;
  readonly options?: RunOptions;
  /** Caller KV writes and enqueues applied atomically with the step-0 enqueue; dropped on a duplicate. */
  readonly effects?: SettlementEffects;
}

/** What `submit` reports. */
export interface SubmitOutcome {
  readonly runId: RunId;
  /** The queue job that currently represents the run. */
  readonly jobId: string;
  /** False when the submission was a duplicate of an active run with the same input. */
  readonly newlySubmitted: boolean;
}

/** What `signal` did with a payload. */
export type SignalOutcome = "delivered" | "buffered";

/** What `retryRun` takes. */
export interface RetryRunOptions {
  /**
   * The step to re-open the run at, with the payload it last ran with.
   * Default: the step the run ended at. A step before it must still have its
   * payload in the run's history (`StepHistory.retryable`).
   */
  readonly fromStep?: number;
}

/** What `retryRun` did. */
export interface RetryOutcome {
  readonly runId: RunId;
  /** The step the run was re-opened at. */
  readonly step: number;
  /** The queue job of that step. */
  readonly jobId: string;
}
