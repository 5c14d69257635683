/**
 * @module One run as an operator sees it: state, current step and its
 * job, the signal it waits on, headers, group, the attempts of its step
 * job (errors with stacks), and for a terminated run how it ended and its
 * result. Built from the read-only view; shared by `taquba runs show` and
 * the dashboard.
 */
import type { WaitingReason } from "../../runtime/queue/types.js";
import type { QueueReader } from "../../runtime/queue/reader.js";
import { droppedBefore } from "../../runtime/queue/attempt-history.js";
import type { JobAttempt, JobInfo } from "../../runtime/queue/types.js";
import { RESERVED_HEADER_PREFIX } from "../../runtime/workflow/records/reserved.js";
import { RunId } from "../../runtime/workflow/runs/run-id.js";
import type { RunErrorKind, RunState, TerminalStatus } from "../../runtime/workflow/runs/run-types.js";
import type { WorkflowView } from "../../runtime/workflow/runs/workflow-view.js";
import type { RunHistory } from "../../runtime/workflow/runs/run-history.js";
import type { HistoryPage } from "../../runtime/workflow/runs/inspect-run.js";
import { previewBytes, type BytesPreview } from "./bytes-preview.js";
import type { RunDamageShown } from "./damage-text.js";

/** A run's state in operator terms: a waiting run is told apart from a pending one. */
export type OperatorRunState = "pending" | "scheduled" | "waiting" | "running" | "cancelling" | TerminalStatus;

/** One entry of a run's timeline, oldest first. */
export interface TimelineEntry {
  readonly at: number;
  readonly kind: "submitted" | "attempt" | "delay" | "wait" | "signal" | "effects" | "redrive" | "terminated";
  readonly step?: number;
  /** The step's name, for typed workflows. */
  readonly stepName?: string;
  readonly attempt?: number;
  /** What happened: an attempt's outcome, a termination's status. */
  readonly outcome?: string;
  readonly error?: string;
  readonly errorName?: string;
  readonly stack?: string;
  /** A delay's end, a wait's deadline. */
  readonly until?: number;
  /** The correlation key of a signal wait. */
  readonly signalKey?: string;
  /** An attempt's start. */
  readonly startedAt?: number;
  /** A received signal's payload size; effects' key lists. */
  readonly bytes?: number;
  readonly keys?: readonly string[];
}

export interface RunDetail {
  readonly runId: string;
  /** The typed workflow or job name, and which of the two. */
  readonly workflow?: string;
  readonly kind?: "workflow" | "job";
  /** Attempts and steps the bounded history left out. */
  readonly omitted?: { readonly steps: number; readonly attempts: number };
  /**
   * The history entries this read shows (one page of them: `count` after
   * step `after`, from the first when absent; `next`, the last one's step,
   * when more follow); absent when they all fit one page.
   */
  readonly historyPage?: { readonly after?: number; readonly count: number; readonly next?: number };
  readonly state: OperatorRunState;
  /** The runtime's own state name (`RunStatus.state`). */
  readonly runtimeState: RunState;
  /** Current step of an active run, final step of a terminated one. */
  readonly step: number;
  readonly submittedAt?: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly group?: { readonly id: string; readonly key: string };
  /** The run that started this one as a child run (while it is active), and the step that started it. */
  readonly parent?: { readonly runId: string; readonly step: number };
  /** The queue job carrying the current step, while active. */
  readonly stepJob?: {
    readonly id: string;
    readonly state: string;
    readonly attempt: number;
    readonly maxAttempts: number;
    /** Times the job was requeued from the dead letters (a redrive), each with fresh attempts; absent when never. */
    readonly requeues?: number;
    readonly runAt?: number;
    readonly lastError?: string;
    readonly payload: { readonly size: number };
  };
  /** The correlation key the current step waits on. */
  readonly signalWait?: string;
  /** Flow control holding the current step back, when the reader can tell (debounce windows and flow rules' concurrency always; every limit in the owner). */
  readonly heldBy?: WaitingReason;
  readonly terminatedAt?: number;
  readonly error?: string;
  readonly errorKind?: RunErrorKind;
  /** The run that replaced this one before it started (a debounce). */
  readonly supersededBy?: string;
  readonly publicError?: string;
  readonly errorCode?: string;
  readonly result?: BytesPreview;
  readonly timeline: readonly TimelineEntry[];
  /**
   * Damaged records of the run that its page still loads past (its
   * listing entry, or the records beside it: the signal wait its step
   * waits on, its group member record, its entry under its parent, its
   * children's entries), which `taquba runs repair` mends; absent when none.
   */
  readonly damage?: readonly RunDamageShown[];
  /**
   * How far `damage` checked the run's children's entries, where it did
   * not check them all at once (a parent of more than one read's worth):
   * `count` entries after the child `after` (from the first when absent),
   * `next` the child to check on from. Absent when all were checked.
   */
  readonly childEntries?: { readonly after?: string; readonly count: number; readonly next?: string };
}

/** Headers the user gave, without the runtime's reserved ones. */
export function userHeaders(h: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith(RESERVED_HEADER_PREFIX)));
}

function attemptEntries(step: number, attempts: readonly JobAttempt[]): TimelineEntry[] {
  return attempts.map((a) => ({
    at: a.recordedAt,
    kind: "attempt",
    step,
    attempt: a.attempt,
    outcome: a.outcome,
    ...(a.claimedAt === undefined ? {} : { startedAt: a.claimedAt }),
    ...(a.error === undefined ? {} : { error: a.error }),
    ...(a.errorName === undefined ? {} : { errorName: a.errorName }),
    ...(a.errorStack === undefined ? {} : { stack: a.errorStack }),
  }));
}

function activeState(job: JobInfo | null, signalWait: string | undefined, cancelling: boolean): OperatorRunState {
  if (cancelling) return "cancelling";
  if (job === null) return "running";
  if (job.state === "claimed") return "running";
  if (signalWait !== undefined && (job.state === "scheduled" || job.state === "pending")) return "waiting";
  if (job.state === "scheduled") return "scheduled";
  return "pending";
}

/** The run `runId`, or null when no record of it exists. Throws `InvalidRunIdError` for a malformed id. */
export async function readRunDetail(view: WorkflowView, reader: QueueReader, runId: string): Promise<RunDetail | null> {
  const id = RunId.parse(runId);
  const records = await view.records(id);
  if (records.kind === "unknown") return null;
  if (records.kind === "terminated") {
    const t = records.terminal;
    const outcome = await view.outcomeOf(t);
    const timeline: TimelineEntry[] = [
      {
        at: t.terminatedAtMs,
        kind: "terminated",
        step: t.finalStep,
        outcome: t.status,
        ...(t.error === undefined ? {} : { error: t.error }),
      },
    ];
    return {
      runId: id,
      state: t.status,
      runtimeState: "terminated",
      step: t.finalStep,
      headers: userHeaders(outcome?.headers ?? {}),
      terminatedAt: t.terminatedAtMs,
      ...(t.error === undefined ? {} : { error: t.error }),
      ...(t.errorKind === undefined ? {} : { errorKind: t.errorKind }),
      ...(t.supersededBy === undefined ? {} : { supersededBy: t.supersededBy }),
      ...(outcome?.publicError === undefined ? {} : { publicError: outcome.publicError }),
      ...(outcome?.errorCode === undefined ? {} : { errorCode: outcome.errorCode }),
      ...(outcome?.result === undefined ? {} : { result: previewBytes(outcome.result) }),
      timeline,
    };
  }
  const { run, pointer } = records;
  const [job, attempts] = await Promise.all([reader.job(pointer.jobId), reader.attemptHistory(pointer.jobId)]);
  const state = activeState(job, pointer.signalWait, run.cancelRequested === true);
  const timeline: TimelineEntry[] = [{ at: run.submittedAtMs, kind: "submitted", step: 0 }, ...attemptEntries(pointer.step, attempts)];
  if (job?.runAt !== undefined && (job.state === "scheduled" || state === "waiting")) {
    timeline.push(
      state === "waiting"
        ? {
            at: job.enqueuedAt,
            kind: "wait",
            step: pointer.step,
            until: job.runAt,
            ...(pointer.signalWait === undefined ? {} : { signalKey: pointer.signalWait }),
          }
        : { at: job.enqueuedAt, kind: "delay", step: pointer.step, until: job.runAt },
    );
  } else if (state === "waiting") {
    timeline.push({
      at: job?.enqueuedAt ?? run.submittedAtMs,
      kind: "wait",
      step: pointer.step,
      ...(pointer.signalWait === undefined ? {} : { signalKey: pointer.signalWait }),
    });
  }
  timeline.sort((a, b) => a.at - b.at);
  // The step job's history keeps its latest attempts only (see attempt-history.ts).
  const attemptsDropped = droppedBefore(attempts);
  return {
    runId: id,
    ...(attemptsDropped === 0 ? {} : { omitted: { steps: 0, attempts: attemptsDropped } }),
    state,
    runtimeState: state === "cancelling" ? "cancelling" : state === "running" ? "running" : "pending",
    step: pointer.step,
    submittedAt: run.submittedAtMs,
    headers: userHeaders(run.headers),
    ...(run.group === undefined ? {} : { group: { id: run.group.id, key: run.group.key } }),
    ...(run.parent === undefined ? {} : { parent: { runId: run.parent.runId, step: run.parent.step } }),
    ...(pointer.signalWait === undefined ? {} : { signalWait: pointer.signalWait }),
    ...(job?.waiting === undefined ? {} : { heldBy: job.waiting }),
    ...(job === null
      ? {}
      : {
          stepJob: {
            id: job.id,
            state: job.state,
            attempt: job.attempt,
            maxAttempts: job.maxAttempts,
            ...(job.requeues === undefined ? {} : { requeues: job.requeues }),
            ...(job.runAt === undefined ? {} : { runAt: job.runAt }),
            ...(job.lastError === undefined ? {} : { lastError: job.lastError }),
            payload: { size: job.payloadSize },
          },
        }),
    timeline,
  };
}

/**
 * The timeline of a run's recorded history: submission, then per step its
 * signal receipt, attempts (errors and stacks), effects and the transition
 * it chose (a delay or a signal wait), redrives, and the end. Entries keep
 * the history's step order; within a step they follow time.
 */
export function historyTimeline(h: RunHistory): TimelineEntry[] {
  const out: TimelineEntry[] = [{ at: h.submittedAtMs, kind: "submitted", step: 0 }];
  const named = (step: number, name: string | undefined) => ({ step, ...(name === undefined ? {} : { stepName: name }) });
  const stepped: TimelineEntry[] = [];
  for (const s of h.steps) {
    const first = s.attempts[0];
    const last = s.attempts[s.attempts.length - 1];
    const base = named(s.step, s.name);
    if (s.signal !== undefined) {
      stepped.push({
        at: first?.startedAtMs ?? last?.endedAtMs ?? h.submittedAtMs,
        kind: "signal",
        ...base,
        signalKey: s.signal.key,
        outcome: s.signal.result,
        ...(s.signal.payloadBytes === undefined ? {} : { bytes: s.signal.payloadBytes }),
      });
    }
    for (const a of s.attempts) {
      stepped.push({
        at: a.endedAtMs,
        kind: "attempt",
        ...base,
        attempt: a.attempt,
        outcome: a.outcome,
        startedAt: a.startedAtMs,
        ...(a.error === undefined ? {} : { error: a.error }),
        ...(a.stack === undefined ? {} : { stack: a.stack }),
      });
    }
    const end = last?.endedAtMs ?? h.submittedAtMs;
    if (s.memoKeysWritten > 0 || s.kvEffects > 0) {
      stepped.push({
        at: end,
        kind: "effects",
        ...base,
        keys: [...s.memoKeys.map((k) => `memo ${k}`), ...s.kvPuts.map((k) => `put ${k}`), ...s.kvDeletes.map((k) => `delete ${k}`)],
      });
    }
    const t = s.transition;
    if (t?.kind === "after") stepped.push({ at: end, kind: "delay", ...base, until: t.runAtMs });
    else if (t?.kind === "on_signal") stepped.push({ at: end, kind: "wait", ...base, signalKey: t.key, until: t.deadlineMs });
  }
  for (const r of h.redrives) {
    stepped.push({
      at: r.replaced.atMs,
      kind: "terminated",
      step: r.replaced.finalStep,
      outcome: r.replaced.status,
      ...(r.replaced.error === undefined ? {} : { error: r.replaced.error }),
    });
    stepped.push({ at: r.atMs, kind: "redrive", step: r.step });
  }
  if (h.end !== undefined) {
    stepped.push({
      at: h.end.atMs,
      kind: "terminated",
      step: h.end.finalStep,
      outcome: h.end.status,
      ...(h.end.error === undefined ? {} : { error: h.end.error }),
    });
  }
  // Stable: entries at the same instant keep their recorded order.
  stepped.sort((a, b) => a.at - b.at);
  return [...out, ...stepped];
}

/** `detail` with the timeline of `history` in place of the one read from the step job, when a history exists. */
export function withHistory(detail: RunDetail, history: (RunHistory & { readonly historyPage?: HistoryPage }) | null): RunDetail {
  if (history === null) return detail;
  const page = history.historyPage;
  const attemptsDropped = history.steps.reduce((n, s) => n + s.attemptsDropped, 0);
  return {
    ...detail,
    // A terminated run's records no longer hold these; its history does.
    submittedAt: detail.submittedAt ?? history.submittedAtMs,
    headers: Object.keys(detail.headers).length > 0 ? detail.headers : userHeaders(history.headers),
    ...(history.workflow === undefined ? {} : { workflow: history.workflow }),
    ...(history.kind === undefined ? {} : { kind: history.kind }),
    ...(history.stepsDropped > 0 || attemptsDropped > 0 ? { omitted: { steps: history.stepsDropped, attempts: attemptsDropped } } : {}),
    ...(page !== undefined && (page.after !== undefined || page.next !== undefined) ? { historyPage: page } : {}),
    timeline: historyTimeline(history),
  };
}
