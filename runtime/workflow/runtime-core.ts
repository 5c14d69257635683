/**
 * @module The state every part of a runtime shares, resolved once by the
 * builder.
 */
import type { TimedClock } from "../clock.js";
import type { FullLogger } from "../logger.js";
import type { StepRunner } from "./steps/delivery.js";
import type { KvReadHandle } from "./steps/effects-handle.js";
import type { MemoStore } from "./memo/memo.js";
import type { WorkflowQueue } from "./queue-port.js";
import { ClosedError } from "../errors.js";
import { KeyedLock, RunEvents } from "./runs/run-events.js";
import type { TerminalSettings } from "./runs/terminal.js";
import type { TerminalHook } from "./terminal-hook/terminal-hook.js";
import type { WorkflowView } from "./runs/workflow-view.js";
import type { ShardPlacement } from "./runs/shard-placement.js";
import type { ParentClosePolicy } from "./records/records.js";

export interface RuntimeCore {
  readonly queue: WorkflowQueue;
  readonly queueName: string;
  readonly memos: MemoStore;
  readonly runner: StepRunner;
  readonly hook: TerminalHook;
  readonly clock: TimedClock;
  readonly stepOutputReplay: boolean;
  readonly memoRetentionMs: number | undefined;
  /** The parent-close policy of a child whose start gives none. */
  readonly parentClose: ParentClosePolicy;
  readonly pollIntervalMs: number;
  readonly maxConcurrentSteps: number;
  readonly leaseMs: number | undefined;
  readonly terminal: TerminalSettings;
  readonly events: RunEvents;
  /** Where step retries, dead letters and worker events are logged. */
  readonly log: FullLogger;
  /** Lower-cased header names whose values never reach a log record or span. */
  readonly sensitiveHeaders: ReadonlySet<string>;
  /** Serializes submissions of one run id within the process. */
  readonly submitLock: KeyedLock;
  /** Serializes wait registrations and signals of one correlation key within the process. */
  readonly signalLock: KeyedLock;
  /** Reads over the runtime's records (set once the view exists, before any step runs). */
  readonly view: WorkflowView;
  /** The shard of a sharded store this runtime's queue is, or undefined. */
  readonly placement: ShardPlacement | undefined;
  /** The committed-KV reads every step is handed (`Step.kv`): one per runtime, not an object and a closure per step. */
  readonly stepKv: KvReadHandle;
  /** Called after a terminating commit is durable: wakes waiters, tells the memo sweeper about the new marker. */
  noteTerminated(runId: string, terminatedAtMs: number): void;
}

// Why these three are keyed by the queue object rather than passed in:
// the unit that must share them is the queue, not a runtime. Any number of
// runtimes and job runners, built independently (one per spec package, or a
// second runtime with other options), may run over one `Queue` in a process,
// and a wait in one must see a cancel committed by another, and two
// submissions of one run id through two runtimes must take turns. A
// constructor argument would make every application thread one shared
// object through every builder, and forgetting it would silently lose
// wake-ups. The queue layer cannot hold them (it knows nothing of runs), so
// they hang off the queue here; a WeakMap drops them with the queue.

/** Submissions to one queue share a lock, even across runtimes over it. */
const submitLocks = new WeakMap<object, KeyedLock>();
const signalLocks = new WeakMap<object, KeyedLock>();

function lockFor(map: WeakMap<object, KeyedLock>, queue: object): KeyedLock {
  let l = map.get(queue);
  if (l === undefined) {
    l = new KeyedLock();
    map.set(queue, l);
  }
  return l;
}

export function submitLockFor(queue: object): KeyedLock {
  return lockFor(submitLocks, queue);
}

/** Signals and wait registrations on one queue share a lock per correlation key, even across runtimes. */
export function signalLockFor(queue: object): KeyedLock {
  return lockFor(signalLocks, queue);
}

export { RunEvents };

const runEvents = new WeakMap<object, RunEvents>();

/**
 * Runtimes over one queue share termination announcements, so a wait in one
 * sees a cancel in another. When the queue closes or its engine fails, the
 * announcements close with its `ClosedError`, settling every wait.
 */
export function runEventsFor(queue: { readonly closedSignal: AbortSignal }): RunEvents {
  let e = runEvents.get(queue);
  if (e === undefined) {
    const events = new RunEvents();
    e = events;
    runEvents.set(queue, events);
    const closed = queue.closedSignal;
    const close = () => events.close(closed.reason instanceof Error ? closed.reason : new ClosedError("the queue", closed.reason));
    if (closed.aborted) close();
    else closed.addEventListener("abort", close, { once: true });
  }
  return e;
}
