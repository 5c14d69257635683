/**
 * @module Child runs: a step starts a run of any workflow of its runtime as
 * its child, and a later step of the parent waits for the child's end.
 *
 * - Identity: the child's run id is derived from the parent's run id, the
 *   starting step's number and a key (the call's index within the step
 *   delivery, or a name the caller gives), so a retried step finds the
 *   child it already started instead of starting another. On a shard of a
 *   sharded store the child runs on its parent's shard, and its id carries
 *   a suffix that routes clients there (see `shard-placement`).
 * - Runs under one parent id: a parent id submitted again after its run
 *   ended is a new run, told apart by the `submission` its run record
 *   stores once (a retry and every resumed delivery read the same one).
 *   Each child records the submission of the parent run that started it.
 *   A child of another run never answers a start: the run then uses a
 *   second id, the first one with its submission appended, which it looks
 *   at first ever after, so its choice does not change when the other
 *   child goes (see `childOfThisRun`). A parent record without a
 *   submission (written by an earlier version) keeps the first id, as
 *   that version did.
 * - A start is held to its step being the run's current one: the child's
 *   submission commits only while the parent's step pointer names the
 *   step's job (checked in that commit), so a delivery that outlived its
 *   lease while another ended the run or moved it on starts nothing
 *   (`ClaimLostError`).
 * - The child's run record names its parent; the parent's run record says
 *   it has children; `workflow/children/{q}/{parent}/{child}` lists the
 *   running children with their parent-close policy.
 * - The end: the settlement that terminates the child also writes its end
 *   into the parent's signal buffer under the completion key
 *   `workflow.child/{parent}/{child}` and enqueues a job that wakes the
 *   parent's step if it already waits on that key. The end is durable
 *   exactly when the termination is, and a signal buffer entry is consumed
 *   once (by the wait registration, or by the woken step), so the parent
 *   receives it once across crashes and restarts; repeating the wake-up is
 *   harmless.
 * - The parent's end: a parent that terminates with children enqueues, in
 *   the same commit, a job that cancels its running children whose policy
 *   is `cancel` (when the parent failed or was cancelled) and drops the
 *   parent's unread child ends. The step's settlement commits only once the
 *   step's starts in flight landed, so that job finds every child.
 */
import { ValidationError } from "../../errors.js";
import { bytesAtCall } from "../bytes-at-call.js";
import { SettlementEffects } from "../../queue/effects.js";
import { ClaimLostError } from "../../queue/errors.js";
import type { ClaimedJob } from "../../queue/types.js";
import { decodeValue, sha256Hex } from "../records/codec.js";
import {
  childCompletionKey,
  childCompletionPrefix,
  childEntryKey,
  childrenPrefix,
  runKey,
  signalBufferKey,
  signalWaitKey,
  stepPointerKey,
} from "../records/kv-keys.js";
import {
  checkParentClose,
  decodeChildEntry,
  decodeRunRecord,
  decodeSignalWait,
  decodeStepPointer,
  encodeChildEntry,
  encodeRunRecord,
  isSubmissionId,
  outcomeRecordOfEnd,
  type ParentClosePolicy,
  type ParentRef,
  type RunRecord,
} from "../records/records.js";
import { decodeIndexEntry, runIndexKey } from "../runs/run-index.js";
import { HEADER_CHILD_ENDED, HEADER_PARENT_ENDED, HEADER_PARENT_SUBMISSION, HEADER_SIGNAL_WAIT } from "../records/reserved.js";
import { MAX_RUN_ID_LEN, RunId } from "../runs/run-id.js";
import type { RunOptions, RunOutcome, TerminalStatus } from "../runs/run-types.js";
import { checkRunOptions, checkUserHeaders, submitRun } from "../runs/submit.js";
import { ROUTE_SUFFIX_ROOM, routedRunId, type ShardPlacement } from "../runs/shard-placement.js";
import type { RuntimeCore } from "../runtime-core.js";
import type { WorkerSlot } from "../steps/settlement-slots.js";
import { cancelRun } from "../runs/cancel.js";
import { decodeChildEnd, encodeChildEnd, type ChildEndPayload } from "./child-end.js";
import { ChildResultUnavailableError, errorText } from "../workflow-errors.js";
import { isStoreFault } from "../store-retry.js";
import type { RunRecords, WorkflowView } from "../runs/workflow-view.js";
import type { Building } from "../../queue/cancel-state.js";
import { describeValue, isOptionBytes, isOptionObject, NO_OPTIONS, optionFields, ownHeader, readOptions, refuseUnknownFields } from "../../option-values.js";
import { readRunOptions } from "../runs/run-option-fields.js";

export type { ParentClosePolicy } from "../records/records.js";
export type { ChildEnd } from "./child-end.js";

/** What `step.children.start` takes. */
export interface ChildRunSpec {
  /** The child's input (for a typed workflow: its step envelope, which the typed context builds). */
  readonly input: Uint8Array;
  /**
   * Names the child among those this step starts: 1 to 64 characters of
   * `[A-Za-z0-9_-]`. Default: the call's index within this delivery of the
   * step (`"0"`, `"1"`, ...), so a step that starts its children in a
   * fixed order may leave it out.
   */
  readonly key?: string;
  /** The child's headers, priority, attempts per step and start time. */
  readonly options?: RunOptions;
  /** What happens to the child when the parent fails or is cancelled while it runs. Default: `"cancel"`. */
  readonly parentClose?: ParentClosePolicy;
}

const CHILD_SPEC_FIELDS = optionFields<ChildRunSpec>({ input: true, key: true, options: true, parentClose: true });
const CHILD_SPEC_SHAPE = "children.start takes { input: Uint8Array, key?, options?, parentClose? }";
const CHILD_OPTIONS_PATH = "children.start.options";

/**
 * A child's spec with each field read once into a plain copy, its options
 * too (see `readRunOptions`): the spec checked is the spec the child is
 * submitted with, after the awaits between (a getter answering another
 * input or key on a second read would start a child no check saw), and a
 * field that cannot be read is a `ValidationError` naming it.
 */
function readChildSpec(given: unknown): ChildRunSpec {
  if (!isOptionObject(given)) throw new ValidationError(`${CHILD_SPEC_SHAPE}, got ${describeValue(given)}`);
  refuseUnknownFields(given, CHILD_SPEC_FIELDS, "children.start.", "children.start's spec");
  const spec: Record<string, unknown> = readOptions(given, CHILD_SPEC_FIELDS, "children.start", "children.start's spec");
  if (!isOptionBytes(spec.input)) throw new ValidationError(`${CHILD_SPEC_SHAPE}; its input is ${describeValue(spec.input)}`);
  spec.options = readRunOptions(spec.options, CHILD_OPTIONS_PATH);
  if (spec.options === undefined) delete spec.options;
  return spec as unknown as ChildRunSpec;
}

/** What `step.children.start` returns. */
export interface ChildRunStart {
  /** The child's run id, derived from the parent's run id, the step number and the key. */
  readonly runId: RunId;
  /** `false` when a delivery of this step already started it (the child may even have ended). */
  readonly newlyStarted: boolean;
  /** The correlation key to continue on to wait for the child's end: `StepOutcome.continueOnSignal(payload, completionKey, timeoutMs)`. */
  readonly completionKey: string;
}

/**
 * A step's child runs (`step.children`): start one, name the key its end
 * arrives under, and read the end the waiting step was entered with.
 */
export interface ChildRuns {
  /**
   * Starts a child run on this runtime, or finds the one a previous
   * delivery of this step started. Not atomic with the step's settlement:
   * a child started by a delivery that then fails is found by the retry.
   * Await it before the step returns: once the step returned, a call (or
   * one still marking the run as a parent) is refused with
   * `ValidationError`; one past that is awaited by the step's settlement,
   * so its child is among the run's children when the run ends.
   */
  start(spec: ChildRunSpec): Promise<ChildRunStart>;
  /** The completion key of child `childRunId` of this run (to wait for a child started by an earlier step). */
  completionKey(childRunId: RunId | string): string;
  /**
   * The child's outcome from the signal a waiting step was entered with
   * (`step.signal`); a result too large to travel with the signal is read
   * from the child's result record. Throws `StoreCorruptedError` for a
   * signal that is not a child's end.
   */
  outcome(signal: Uint8Array): Promise<RunOutcome>;
  /**
   * The child whose end this step waited for (it was continued with
   * `continueOnChild`): entered with its end, or with `step.signal === null`
   * when the wait timed out. `undefined` for a step that waited for no child.
   */
  waitedChild(): RunId | undefined;
}

const KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The run id of child `key` started by step `step` of run `parentRunId`;
 * on a shard (`placement`), suffixed so that it routes to the parent's
 * shard, where the child runs (see `shard-placement`). With
 * `parentSubmission`, the second id: the one a parent run uses when the
 * first is held by a child of another run under its id (see the module
 * comment), `<parent>-s<step>-<key>-p<submission>`.
 */
export function childRunId(parentRunId: string, step: number, key: string, placement?: ShardPlacement, parentSubmission?: string): RunId {
  if (parentSubmission !== undefined && !isSubmissionId(parentSubmission)) {
    throw new ValidationError(`a parent run's submission is 1 to 128 characters of [A-Za-z0-9_-], got ${describeValue(parentSubmission)}`);
  }
  if (typeof parentRunId !== "string") throw new ValidationError(`a parent run id must be a string, got ${describeValue(parentRunId)}`);
  if (!Number.isSafeInteger(step) || step < 0) throw new ValidationError(`a step number must be a whole number >= 0, got ${describeValue(step)}`);
  if (typeof key !== "string") throw new ValidationError(`a child key must be a string, got ${describeValue(key)}`);
  const tag = parentSubmission === undefined ? "" : `-p${parentSubmission}`;
  const plain = `${parentRunId}-s${step}-${key}${tag}`;
  const routed = placement !== undefined && placement.shards > 1 ? placement : undefined;
  const room = routed === undefined ? 0 : ROUTE_SUFFIX_ROOM;
  // Too long to be a run id: a hash of the same parts, just as stable.
  const id = RunId.parse(plain.length <= MAX_RUN_ID_LEN - room ? plain : `child-${sha256Hex(`${parentRunId}/${step}/${key}${tag}`).slice(0, 48)}`);
  return routed === undefined ? id : routedRunId(id, routed);
}

/** Child runs of a step that is bound to no runtime (`Step.detached`): every call explains itself. */
export const DETACHED_CHILDREN: ChildRuns = Object.freeze({
  start(): Promise<ChildRunStart> {
    return Promise.reject(new ValidationError("a detached step cannot start child runs; run the step on a WorkflowRuntime"));
  },
  completionKey(): string {
    throw new ValidationError("a detached step has no child runs; run the step on a WorkflowRuntime");
  },
  outcome(): Promise<RunOutcome> {
    return Promise.reject(new ValidationError("a detached step has no child runs; run the step on a WorkflowRuntime"));
  },
  waitedChild(): undefined {
    return undefined;
  },
});

/** What a step's `children` reads of its opened step, on first use: the runtime, the run and step, its run record, and the claimed job. */
export interface ChildStepOwner {
  readonly core: RuntimeCore;
  readonly runId: RunId;
  readonly step: number;
  /** The run record as read when the step opened. */
  readonly run: RunRecord;
  readonly job: ClaimedJob;
}

/**
 * The incarnation of the run whose step a runtime handed `step` (its run
 * record's, as read when the step opened); `undefined` for a step no
 * runtime opened (`Step.detached`). Read through the step's `children`,
 * the one handle that holds its opened step: no field of its own on every
 * step, for the few runners (job steps) that ask.
 */
export function runIncarnationOf(step: { readonly children: ChildRuns }): string | undefined {
  const children = step.children;
  return children instanceof StepChildren ? children.incarnation() : undefined;
}

/** One step delivery's `children`, with what the runtime asks of it: `started()` tells whether this delivery started a child (the run record the step read at claim predates that); `seal()` closes its starts when the step returned. */
export type StepChildRuns = ChildRuns & { started(): boolean; seal(): Promise<unknown> | undefined };

/** The child runs of the opened step `owner`: nothing of their state is made until the runner uses them. */
export function childRunsFor(owner: ChildStepOwner): StepChildRuns {
  return new StepChildren(owner);
}

/**
 * One step delivery's `children`: made for every step and used by few, so
 * it holds only its step, and the starts' state (`ChildStarts`, with the
 * job's signal-wait header read) is made on the first read of a method.
 */
class StepChildren implements ChildRuns {
  readonly #owner: ChildStepOwner;
  #starts: ChildStarts | undefined;
  /** Sealed before any use: a state made after it is sealed at once. */
  #sealed = false;

  constructor(owner: ChildStepOwner) {
    this.#owner = owner;
  }

  #made(): ChildStarts {
    if (this.#starts !== undefined) return this.#starts;
    const { core, runId, step, job } = this.#owner;
    const waitKey = ownHeader(job.headers, HEADER_SIGNAL_WAIT);
    const starts = new ChildStarts(core, runId, step, job.id, waitKey === undefined ? undefined : childOfCompletionKey(waitKey, runId));
    if (this.#sealed) starts.seal();
    this.#starts = starts;
    return starts;
  }

  /** Whether this delivery started a child. For the runtime, not the runner: a method. */
  started(): boolean {
    return this.#starts?.started() === true;
  }

  /** The run's incarnation (see `runIncarnationOf`). For the runtime, not the runner: a method. */
  incarnation(): string {
    return this.#owner.run.incarnation;
  }

  /** See `ChildStarts.seal`; nothing to wait for when the runner never used its children. */
  seal(): Promise<unknown> | undefined {
    this.#sealed = true;
    return this.#starts?.seal();
  }

  get start(): ChildRuns["start"] {
    return this.#made().start;
  }

  get completionKey(): ChildRuns["completionKey"] {
    return this.#made().completionKey;
  }

  get outcome(): ChildRuns["outcome"] {
    return this.#made().outcome;
  }

  get waitedChild(): ChildRuns["waitedChild"] {
    return this.#made().waitedChild;
  }
}

/**
 * The state of one step delivery's child starts, made on its first use.
 * The methods a runner reads are made then, each once and bound to this
 * object (so `const { start } = step.children` works), rather than five
 * closures and their context per step.
 */
class ChildStarts implements ChildRuns {
  #index = 0;
  #started = false;
  /** Set when the step returned: a start after it would make a child the settlement does not know of. */
  #sealed = false;
  /** Starts past the seal's last check whose child has not landed yet: the settlement waits for them (see `seal`). */
  #landing: Set<Promise<ChildRunStart>> | undefined;
  /** The last start of each key still landing: the next on that key lands after it (see `#startChild`). */
  #lastOfKey: Map<string, Promise<ChildRunStart>> | undefined;
  #start: ChildRuns["start"] | undefined;
  #completionKey: ChildRuns["completionKey"] | undefined;
  #outcome: ChildRuns["outcome"] | undefined;
  #waitedChild: ChildRuns["waitedChild"] | undefined;

  constructor(
    private readonly core: RuntimeCore,
    private readonly parentRunId: RunId,
    private readonly step: number,
    /** The step's job: the step pointer names it while this delivery's step is the run's current one. */
    private readonly jobId: string,
    private readonly waited: RunId | undefined,
  ) {}

  /** Whether this delivery started a child. For the runtime, not the runner: a method. */
  started(): boolean {
    return this.#started;
  }

  /**
   * Closes the step's starts when the step returned: a later call, or a
   * call still reading the run record then, is refused. A start past that
   * point has set `started()` before the settlement reads it, and the
   * returned promise (`undefined` when none is in flight) settles once
   * each such start's child landed or failed to: the settlement awaits it,
   * so the run's end, and the sweep of its children that the end
   * enqueues, come after every child the step started is in its list.
   */
  seal(): Promise<unknown> | undefined {
    this.#sealed = true;
    const landing = this.#landing;
    return landing === undefined || landing.size === 0 ? undefined : Promise.allSettled(landing);
  }

  get start(): ChildRuns["start"] {
    return (this.#start ??= (spec) => this.#startChild(spec));
  }

  #refuseWhenSealed(): void {
    if (this.#sealed) {
      throw new ValidationError(
        `step ${this.step} of run "${this.parentRunId}" already returned, so its children.start can start no child run; ` +
          "call children.start within the step and await it before the step returns",
      );
    }
  }

  get completionKey(): ChildRuns["completionKey"] {
    return (this.#completionKey ??= (childId) => childCompletionKey(this.parentRunId, RunId.parse(childId)));
  }

  get outcome(): ChildRuns["outcome"] {
    return (this.#outcome ??= (signal) => childOutcome(this.core, signal));
  }

  get waitedChild(): ChildRuns["waitedChild"] {
    return (this.#waitedChild ??= () => this.waited);
  }

  async #startChild(given: ChildRunSpec): Promise<ChildRunStart> {
    const { core, parentRunId } = this;
    this.#refuseWhenSealed();
    const read = readChildSpec(given);
    // The input as it is now: the child is submitted once the parent is marked, after awaits.
    const spec: ChildRunSpec = { ...read, input: bytesAtCall(`the input of the child run step ${this.step} of run "${parentRunId}" starts`, read.input) };
    const key = spec.key ?? String(this.#index);
    this.#index++;
    if (typeof key !== "string" || !KEY_PATTERN.test(key)) {
      throw new ValidationError(`a child's key must be 1 to 64 characters of [A-Za-z0-9_-], got ${describeValue(key)}`);
    }
    const parentClose = checkParentClose(spec.parentClose ?? core.parentClose);
    // Bad options (a debounce period of NaN, say) are refused before the run is marked a parent.
    const options: RunOptions = spec.options ?? NO_OPTIONS;
    checkUserHeaders(options.headers, `${CHILD_OPTIONS_PATH}.headers`);
    checkRunOptions(options, CHILD_OPTIONS_PATH);
    const parentRun = await markParent(core, parentRunId, this.jobId, this.step);
    const tag = parentRun.submission === undefined ? undefined : `-p${parentRun.submission}`;
    // Its first id would be the second id of the key without the tag: two keys, one child.
    if (tag !== undefined && key.length > tag.length && key.endsWith(tag)) {
      throw new ValidationError(
        `a child's key may not end with "-p" and this run's submission (${JSON.stringify(tag)}): the run's second id for child ` +
          `${JSON.stringify(key.slice(0, -tag.length))} is the first id for this key, so both would name one child; choose another key`,
      );
    }
    // Checked again after the await: the step may have returned meanwhile (a start left unawaited).
    this.#refuseWhenSealed();
    this.#started = true;
    // Starts on one key land one after another. Side by side, a start could find no child, then submit after
    // the other start's child had already ended: submitting an ended run's id starts it again.
    const lastOfKey = (this.#lastOfKey ??= new Map());
    const before = lastOfKey.get(key);
    const land = () => this.#land(spec, key, parentClose, parentRun);
    const landing = before === undefined ? land() : before.then(land, land);
    lastOfKey.set(key, landing);
    const inFlight = (this.#landing ??= new Set());
    inFlight.add(landing);
    try {
      return await landing;
    } finally {
      inFlight.delete(landing);
      if (lastOfKey.get(key) === landing) lastOfKey.delete(key);
    }
  }

  /** Finds or submits the child of a start past the seal's checks (see `seal`). */
  async #land(spec: ChildRunSpec, key: string, parentClose: ParentClosePolicy, parentRun: RunRecord): Promise<ChildRunStart> {
    const { core, parentRunId, step } = this;
    // Each write is held to this step being the run's current one, in its own commit: a delivery
    // that lost its lease while another ended the run (or moved it on) leaves nothing behind.
    for (let round = 0; round < MAX_GUARD_ROUNDS; round++) {
      const current = await this.#currentStep();
      const { runId, known } = await childOfThisRun(core, parentRunId, parentRun, step, key);
      const completionKey = childCompletionKey(parentRunId, runId);
      if (known.kind === "terminated") {
        // The child ended before this delivery (a retried step, or a retried parent): its end is
        // reported again, into the buffer the parent's wait reads; a buffer holds one payload,
        // so this never makes two.
        const outcome = await core.view.outcomeOf(known.terminal);
        const end = outcome ?? { runId, status: known.terminal.status, finalStep: known.terminal.finalStep, headers: {} };
        const buffered = new SettlementEffects().kvPut(
          signalBufferKey(core.queueName, completionKey),
          encodeChildEnd(end, {
            token: known.terminal.token,
            memoPrefix: known.terminal.memoPrefix ?? core.memos.prefix,
            incarnation: known.terminal.incarnation,
          }),
        );
        if (await core.signalLock.run(completionKey, () => core.queue.kvCompareAndApply([current], buffered))) {
          return { runId, newlyStarted: false, completionKey };
        }
        continue;
      }
      const entry = new SettlementEffects().kvPut(childEntryKey(core.queueName, parentRunId, runId), encodeChildEntry({ parentClose }));
      const out = await submitRun(
        core,
        { input: spec.input, runId, ...(spec.options === undefined ? {} : { options: spec.options }) },
        undefined,
        undefined,
        undefined,
        entry,
        {
          runId: parentRunId,
          step,
          parentClose,
          ...(parentRun.submission === undefined ? {} : { submission: parentRun.submission }),
        },
        [current],
      );
      if (out !== "raced") return { runId, newlyStarted: out.newlySubmitted, completionKey };
    }
    throw new Error(
      `the step pointer of run "${parentRunId}", or the debounce window of the child it started, changed ${MAX_GUARD_ROUNDS} times while the child run started; the step is retried`,
    );
  }

  /**
   * The parent's step pointer while it names this delivery's job (the guard
   * of the start's writes); `ClaimLostError` when it does not: the step was
   * settled by another delivery of it, or the run ended.
   */
  async #currentStep(): Promise<{ key: string; value: Uint8Array }> {
    const key = stepPointerKey(this.core.queueName, this.parentRunId);
    const value = await this.core.queue.kvGet(key);
    if (value === null || decodeStepPointer(value, key).jobId !== this.jobId) throw staleStart(this.jobId, this.parentRunId, this.step);
    return { key, value };
  }
}

/** Rounds of a child start whose guard (or debounce window) changed under it before the start gives up (the step is retried). */
const MAX_GUARD_ROUNDS = 32;

/** The refusal of a start by a delivery whose step is no longer the run's current one. */
function staleStart(jobId: string, parentRunId: string, step: number): ClaimLostError {
  return new ClaimLostError(
    jobId,
    `step ${step} of run "${parentRunId}" was settled by another delivery or the run ended, so this delivery can start no child run`,
  );
}

/**
 * The id of child `key` of step `step` of the active run `parent` under
 * `parentRunId`, and what the runtime knows of it: the first id unless a
 * child of another run holds it, the second id then. The second id is
 * looked at first, so a step that once took it keeps it, even after the
 * other run's child is swept; a step that took the first id finds its
 * own child there. A parent record without a submission takes the first.
 */
async function childOfThisRun(
  core: RuntimeCore,
  parentRunId: RunId,
  parent: RunRecord,
  step: number,
  key: string,
): Promise<{ runId: RunId; known: RunRecords }> {
  const first = childRunId(parentRunId, step, key, core.placement);
  if (parent.submission === undefined) return { runId: first, known: await core.view.records(first) };
  const second = childRunId(parentRunId, step, key, core.placement, parent.submission);
  const atSecond = await core.view.records(second);
  if (atSecond.kind !== "unknown") return { runId: second, known: atSecond };
  const atFirst = await core.view.records(first);
  if (atFirst.kind === "unknown" || (await startedBy(core, atFirst, parentRunId, parent))) return { runId: first, known: atFirst };
  return { runId: second, known: atSecond };
}

/** The parent reference of the run with records `r`; "unreadable" when an ended run's index entry is gone or damaged. */
async function parentRefOf(core: RuntimeCore, r: Exclude<RunRecords, { kind: "unknown" }>): Promise<ParentRef | undefined | "unreadable"> {
  if (r.kind === "active") return r.run.parent;
  const at = r.terminal.submittedAtMs;
  if (at === undefined) return "unreadable";
  const key = runIndexKey(core.queueName, at, r.terminal.runId);
  const bytes = await core.queue.kvGet(key);
  if (bytes === null) return "unreadable";
  try {
    return decodeIndexEntry(bytes, key).parent;
  } catch {
    // A damaged entry (its listing reports it): judged by the submission times.
    return "unreadable";
  }
}

/**
 * Whether the run with records `r` is a child that the run `parent` under
 * `parentRunId` started (and not one of an earlier run under that id).
 * A child written before children named their parent's submission is the
 * parent's when submitted at or after the parent was.
 */
async function startedBy(core: RuntimeCore, r: Exclude<RunRecords, { kind: "unknown" }>, parentRunId: string, parent: RunRecord): Promise<boolean> {
  const ref = await parentRefOf(core, r);
  if (ref === undefined) return false;
  if (ref !== "unreadable") {
    if (ref.runId !== parentRunId) return false;
    if (ref.submission !== undefined) return ref.submission === parent.submission;
  }
  const childAt = r.kind === "active" ? r.run.submittedAtMs : r.terminal.submittedAtMs;
  return childAt !== undefined && childAt >= parent.submittedAtMs;
}

/** Sets `hasChildren` on the parent's run record (once), so its termination settles its children; returns the record. */
async function markParent(core: RuntimeCore, parentRunId: string, jobId: string, step: number): Promise<RunRecord> {
  const key = runKey(core.queueName, parentRunId);
  for (let round = 0; round < 32; round++) {
    const bytes = await core.queue.kvGet(key);
    // Only a delivery that outlived its lease sees its run ended.
    if (bytes === null) throw staleStart(jobId, parentRunId, step);
    const run = decodeRunRecord(bytes, key);
    if (run.hasChildren === true) return run;
    if (await core.queue.kvCompareAndPut(key, bytes, encodeRunRecord({ ...run, hasChildren: true }))) return run;
  }
  throw new Error(`run "${parentRunId}" changed 32 times while a child run started; the step is retried`);
}

async function childOutcome(core: RuntimeCore, signal: Uint8Array): Promise<RunOutcome> {
  if (!(signal instanceof Uint8Array)) throw new ValidationError("children.outcome takes the signal the waiting step was entered with (a Uint8Array)");
  const end = decodeChildEnd(signal, "the signal of this step");
  const { resultOmitted, errorOmitted, token, memoPrefix, incarnation, ...rest } = end;
  if (resultOmitted !== true && errorOmitted !== true) return { ...rest, headers: {} };
  const full = await recordOfEnd(core, end);
  if (resultOmitted === true && (full === null || full.result === undefined)) {
    throw await resultUnavailable(core, end);
  }
  const out: Building<RunOutcome> = { ...rest, headers: {} };
  if (resultOmitted === true) out.result = full!.result;
  // Whole error texts from the result record; the cut ones when it is gone.
  if (errorOmitted === true && full !== null) {
    if (full.error !== undefined) out.error = full.error;
    if (full.publicError !== undefined) out.publicError = full.publicError;
    if (full.errorCode !== undefined) out.errorCode = full.errorCode;
  }
  return out;
}

/**
 * The result record of the termination `end` reports: by its token, so a
 * child re-opened and ended again since is read as it was then; an end
 * that names no token (written before ends kept it) reads the child's
 * current end, when that is the same one.
 */
async function recordOfEnd(core: RuntimeCore, end: ChildEndPayload): Promise<RunOutcome | null> {
  if (end.token !== undefined) {
    const memos = core.memos.withPrefix(end.memoPrefix ?? core.memos.prefix);
    const named = { token: end.token, incarnation: end.incarnation };
    let rec = await memos.readOutcomeRecord(end.runId, end.token);
    // One kept in this process may be an earlier pass's: the store's, read again, is the latest.
    if (rec !== null && !outcomeRecordOfEnd(rec, named)) rec = await memos.readOutcomeRecord(end.runId, end.token);
    return rec !== null && outcomeRecordOfEnd(rec, named) ? rec.outcome : null;
  }
  const r = await core.view.records(end.runId);
  if (r.kind !== "terminated" || r.terminal.status !== end.status || r.terminal.finalStep !== end.finalStep) return null;
  return core.view.outcomeOf(r.terminal);
}

/** Why the result record of the child's end `end` cannot be read, from what the child's records say now. */
async function resultUnavailable(core: RuntimeCore, end: ChildEndPayload): Promise<ChildResultUnavailableError> {
  const what = `it ${end.status} at step ${end.finalStep} with a result too large to travel with its end`;
  // An end that names its termination is read by it: a re-opening leaves that record in place, unless the
  // later pass's end repeated its token (a step queue that hands a job id out again) and wrote over it.
  if (end.token !== undefined && end.incarnation !== undefined) {
    const rec = await core.memos.withPrefix(end.memoPrefix ?? core.memos.prefix).readOutcomeRecord(end.runId, end.token);
    if (rec !== null && !outcomeRecordOfEnd(rec, { token: end.token, incarnation: end.incarnation })) {
      return new ChildResultUnavailableError(
        end.runId,
        "replaced",
        `${what}, and it ran again since (retryRun, or a submission again under its run id) and ended again with the same step job id and attempt (the step queue handed ` +
          "the job id out again), whose result record took this end's place: this end's result cannot be read again; read the child's " +
          "latest end with runtime.outcome, or start the child again under a new key",
      );
    }
  }
  if (end.token === undefined) {
    const r = await core.view.records(end.runId);
    if (r.kind === "active" || (r.kind === "terminated" && (r.terminal.status !== end.status || r.terminal.finalStep !== end.finalStep))) {
      return new ChildResultUnavailableError(
        end.runId,
        "replaced",
        `${what}, and it was re-opened since (retryRun) and ${r.kind === "active" ? "is running again" : `ended again (${r.terminal.status} at step ${r.terminal.finalStep})`}; ` +
          "this end was written by an earlier version, which did not name the termination it reports, so only the child's latest end can be read: " +
          (r.kind === "active" ? "wait for its next end (continue on its completion key again)" : "read it with runtime.outcome"),
      );
    }
  }
  return new ChildResultUnavailableError(
    end.runId,
    "removed",
    `${what}, and its result record is gone from the memo store (by memoStore.clearMemosForRun, or by a retention sweep); ` +
      "it cannot be read again: start the child again under a new key if the parent needs its result",
  );
}

/** Processes a job a child's termination enqueued: wakes the parent's step that waits for it. */
export async function processChildEnded(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): Promise<void> {
  const key = ownHeader(job.headers, HEADER_CHILD_ENDED)!;
  const parent = decodeValue(job.payload);
  if (typeof parent !== "string") {
    await slot.freeAfterSubmitting(core.queue.deadLetter(job, "the job that reports a child run's end lacks its parent's run id"));
    return;
  }
  await wakeParent(core, key, parent);
  await slot.freeAfterSubmitting(core.queue.ack(job));
}

/**
 * Wakes the step of `parent` that waits on child completion key `key`, or
 * drops the buffered end when no run will read it (the parent ended, or a
 * later run under its id is active; see `endStillRead`). Harmless to repeat: the
 * dead-step reconciliation does it again for a wake job the queue
 * dead-lettered, since the parent's wait has no timeout.
 */
export async function wakeParent(core: RuntimeCore, key: string, parent: string): Promise<void> {
  await core.signalLock.run(key, async () => {
    const bufKey = signalBufferKey(core.queueName, key);
    const buffered = await core.queue.kvGet(bufKey);
    // No end buffered: it was consumed already (a late or repeated wake-up). Waking the
    // parent now would end its wait with no signal, which it would take for a timeout.
    if (buffered === null) return;
    const waitKey = signalWaitKey(core.queueName, key);
    const w = await core.queue.kvGet(waitKey);
    if (w !== null) {
      const waiter = decodeSignalWait(w, waitKey);
      // Woken without a payload: the step consumes the buffered end when it is claimed.
      if (await core.queue.wakeScheduled(core.queueName, waiter.jobId)) {
        await core.queue.kvCompareAndDelete(waitKey, w);
        return;
      }
    }
    // A parent that ended without reading the end never will, nor will a later run under its id: drop it.
    if (!(await endStillRead(core, key, parent))) await core.queue.kvCompareAndDelete(bufKey, buffered);
  });
}

/**
 * Whether a run under `parent`'s id may still read the child end buffered
 * under completion key `key`: one is active, and it started that child (a
 * run submitted again after the end never reads an earlier run's child;
 * a record without a submission cannot tell, so it may).
 */
async function endStillRead(core: RuntimeCore, key: string, parent: string): Promise<boolean> {
  const rk = runKey(core.queueName, parent);
  const bytes = await core.queue.kvGet(rk);
  if (bytes === null) return false;
  let run: RunRecord;
  try {
    run = decodeRunRecord(bytes, rk);
  } catch {
    // A damaged record (its run's own reads report it): the end is kept for it.
    return true;
  }
  const child = childOfCompletionKey(key, parent);
  if (run.submission === undefined || child === undefined) return true;
  const r = await core.view.records(child);
  return r.kind === "unknown" || (await startedBy(core, r, parent, run));
}

/** The child's run id in completion key `key` of a child of `parent`; `undefined` when it is not one. */
function childOfCompletionKey(key: string, parent: string): RunId | undefined {
  const parts = key.split("/");
  return parts.length === 3 && parts[0] === "workflow.child" && parts[1] === parent && RunId.isValid(parts[2]) ? RunId.parse(parts[2]) : undefined;
}

/** The parent's run id in child completion key `key` (`workflow.child/{parent}/{child}`); `undefined` when it is not one. */
export function parentOfCompletionKey(key: string): string | undefined {
  const parts = key.split("/");
  return parts.length === 3 && parts[0] === "workflow.child" && RunId.isValid(parts[1]) ? parts[1] : undefined;
}

/**
 * Processes a job a parent's termination enqueued: cancels the running
 * children whose policy is `cancel` when the parent did not succeed, and
 * drops the parent's child bookkeeping. A parent re-opened since (a retry)
 * keeps it; a new run under the parent's id (submitted again after the
 * end) keeps only the children it started itself.
 */
export async function processParentEnded(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): Promise<void> {
  const parent = ownHeader(job.headers, HEADER_PARENT_ENDED)!;
  const status = decodeValue(job.payload) as TerminalStatus;
  try {
    const key = runKey(core.queueName, parent);
    const bytes = await core.queue.kvGet(key);
    const now = bytes === null ? undefined : decodeRunRecord(bytes, key);
    // A record without a submission cannot tell its own children from an earlier run's: all are kept, as before.
    if (now === undefined || now.submission !== undefined)
      await settleChildren(core, core.view, parent, status, now, ownHeader(job.headers, HEADER_PARENT_SUBMISSION));
  } catch (e) {
    // The store failing is not the job's fault: the worker puts it back uncounted.
    if (isStoreFault(e)) throw e;
    await slot.freeAfterSubmitting(core.queue.nack(job, `could not settle the child runs of run "${parent}": ${errorText(e)}`));
    return;
  }
  await slot.freeAfterSubmitting(core.queue.ack(job));
}

/**
 * Settles the children of `parent` as its termination would have, for a
 * parent-ended job the queue dead-lettered: from the parent's terminal
 * record, when the parent is still ended (a re-opened parent keeps its
 * children). A job that names the `submission` of the run that ended and
 * its `status` settles that run's children also when a later run under
 * the id is active or ended since (whose own children it leaves).
 * Harmless to repeat.
 */
export async function settleEndedParent(core: RuntimeCore, view: WorkflowView, parent: string, submission?: string, status?: string): Promise<void> {
  if (!RunId.isValid(parent)) return;
  const r = await view.records(parent);
  const ended = status === "succeeded" || status === "failed" || status === "cancelled" ? status : undefined;
  // The run the records show now is a later one than the job's.
  const later = (now: string | undefined) => submission !== undefined && now !== undefined && now !== submission;
  if (r.kind === "terminated") {
    await settleChildren(core, view, parent, ended !== undefined && later(r.terminal.submission) ? ended : r.terminal.status, undefined, submission);
  } else if (r.kind === "active" && ended !== undefined && later(r.run.submission)) {
    await settleChildren(core, view, parent, ended, r.run, submission);
  }
}

/**
 * Settles the running children of the ended `parent` and drops its unread
 * child ends; with `active`, the run under the parent's id that is active
 * now (submitted again after the end), the children it started and their
 * ends are left to it. With `ended`, the submission of the run that ended,
 * children that name another submission of the parent are left too: they
 * belong to a later run, which may have ended as well (its own job settles
 * them), or to an earlier one.
 */
async function settleChildren(
  core: RuntimeCore,
  view: WorkflowView,
  parent: string,
  status: TerminalStatus,
  active?: RunRecord,
  ended?: string,
): Promise<void> {
  const q = core.queueName;
  const kept = async (child: string): Promise<boolean> => {
    if ((active === undefined && ended === undefined) || !RunId.isValid(child)) return false;
    const r = await view.records(child);
    if (r.kind === "unknown") return false;
    if (active !== undefined && (await startedBy(core, r, parent, active))) return true;
    if (ended === undefined) return false;
    const ref = await parentRefOf(core, r);
    return typeof ref === "object" && ref.runId === parent && ref.submission !== undefined && ref.submission !== ended;
  };
  const prefix = childrenPrefix(q, parent);
  // Kept entries stay, so each page starts after the last key seen.
  for (let after: string | undefined; ; ) {
    const page = await core.queue.kvScan(prefix, { limit: 256, ...(after === undefined ? {} : { after }) });
    if (page.entries.length === 0) break;
    for (const e of page.entries) {
      after = e.key;
      const child = e.key.slice(prefix.length);
      if (await kept(child)) continue;
      if (status !== "succeeded" && decodeChildEntry(e.value, e.key).parentClose === "cancel") await cancelRun(core, view, child);
      await core.queue.kvCompareAndDelete(e.key, e.value);
    }
  }
  const bufPrefix = signalBufferKey(q, childCompletionPrefix(parent));
  for (let after: string | undefined; ; ) {
    const page = await core.queue.kvScan(bufPrefix, { limit: 256, ...(after === undefined ? {} : { after }) });
    if (page.entries.length === 0) break;
    for (const e of page.entries) {
      after = e.key;
      const key = e.key.slice(signalBufferKey(q, "").length);
      const child = childOfCompletionKey(key, parent);
      if (child !== undefined && (await kept(child))) continue;
      await core.signalLock.run(key, () => core.queue.kvCompareAndDelete(e.key, e.value));
    }
  }
}
