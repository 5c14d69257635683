/**
 * @module Opening a claimed step job: the jobs that are not a run's step
 * (notifications, child and parent ends, no-ops) and steps with nothing to
 * do (a malformed job, a run that ended or moved past it) settled here, and
 * for a step to run, its run's records read and checked and gathered into
 * one `OpenStep` for the rest of its processing.
 *
 * A step whose records the queue answers in this turn (a chained step
 * carrying them, or any step on a queue with `kvGetNow`) opens without an
 * await: the processor's own frame then awaits only the runner and the
 * settlement. Anything else goes through `openStepSlowly`, its own frame.
 */
import type { KvToken } from "../../queue/queue.js";
import type { ClaimedJob } from "../../queue/types.js";
import { KvKeyPrefixRef, type KvKeyRef } from "../../queue/user-keys.js";
import { ownHeader } from "../../option-values.js";
import { bytesEqual } from "../../store/bytes-equal.js";
import { type ChildStepOwner, childRunsFor, processChildEnded, processParentEnded, type StepChildRuns } from "../children/child-runs.js";
import type { MemoStore, MemoWrites } from "../memo/memo.js";
import { decodeRunRecord, decodeStepPointer, type RunRecord, type StepPointer } from "../records/records.js";
import { runKey, stepPointerKey } from "../records/kv-keys.js";
import { runHistoryPrefix } from "../runs/history-records.js";
import { HEADER_CHILD_ENDED, HEADER_NOOP, HEADER_PARENT_ENDED, HEADER_RUN_ID, HEADER_STEP, HEADER_TERMINAL } from "../records/reserved.js";
import { reopenRequeued } from "../runs/redrive.js";
import { RunId } from "../runs/run-id.js";
import type { RuntimeCore } from "../runtime-core.js";
import { processNotification } from "../terminal-hook/notification.js";
import { EffectsHandle } from "./effects-handle.js";
import type { WorkerSlot } from "./settlement-slots.js";
import { type CarriedRun, decodeKnown, type Known, type RunKeys } from "./step-carry.js";
import type { StepTrace } from "./step-history.js";

/**
 * A step of a live run, opened: its run's records as read before the
 * runner runs and the handles the runner gets. Also the trace its history
 * entry reads (`StepTrace`): one object per step for both.
 */
export class OpenStep implements StepTrace, ChildStepOwner, MemoWrites {
  /** The signal the step observed; set by the processor once resolved (only a step continued on a signal has one). */
  signal: Uint8Array | null | undefined = undefined;
  /** The memo keys the runner wrote, noted by its memos: made on the first write (see `MemoWrites`). */
  memoKeys: string[] | undefined = undefined;
  /** What the runner stages, committed with the settlement. */
  readonly effects = new EffectsHandle();
  /** The runner's `children`: their state made on first use (see `childRunsFor`). */
  readonly children: StepChildRuns = childRunsFor(this);

  constructor(
    readonly core: RuntimeCore,
    readonly job: ClaimedJob,
    readonly runId: RunId,
    readonly step: number,
    /** The step's name, from its step pointer. */
    readonly name: string | undefined,
    readonly keys: RunKeys,
    /** The run record's bytes and their decoded value, as read before the runner ran. */
    readonly runBytes: Uint8Array,
    readonly run: RunRecord,
    /** The run record's token in the turn it was read, when known: while it is the key's token, the record is unchanged. */
    readonly runToken: KvToken | undefined,
    /** Where the run keeps its memos (its submitting runtime's prefix). */
    readonly memos: MemoStore,
    /** The carried run record when it is the one read (its token unchanged): handed on as it is to the run's next step. */
    readonly carriedRun: Known<RunRecord> | undefined,
  ) {}

  /** Whether the run has (or this delivery started) a child run. */
  hasChildren(): boolean {
    return this.run.hasChildren === true || this.children.started();
  }

  /**
   * Closes staging and child starts once the runner returned; a promise
   * when a child start already past its checks is still landing (await it,
   * so the run's end finds that child among the run's children).
   */
  seal(): Promise<unknown> | undefined {
    this.effects.seal();
    return this.children.seal();
  }
}

/**
 * Opens a claimed job of the step queue: an `OpenStep` when its records
 * were answered in this turn, else a promise of one; `undefined` (in the
 * promise) when the job was settled here (it was no step to run).
 */
export function openStep(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): OpenStep | Promise<OpenStep | undefined> {
  const h = job.headers;
  if (
    ownHeader(h, HEADER_TERMINAL) !== undefined ||
    ownHeader(h, HEADER_CHILD_ENDED) !== undefined ||
    ownHeader(h, HEADER_PARENT_ENDED) !== undefined ||
    ownHeader(h, HEADER_NOOP) !== undefined
  ) {
    return settleOtherJob(core, job, slot);
  }
  // The records as the settlement that claimed this step left them, when it did: read again, decoded only if changed.
  const carried = slot.takeCarried();
  const runId = ownHeader(h, HEADER_RUN_ID);
  const step = Number(ownHeader(h, HEADER_STEP));
  if (!isRunIdOf(runId, carried) || !Number.isInteger(step) || step < 0) return notAStep(core, job, slot);
  const keys: RunKeys = carried?.keys ?? runKeysOf(core, runId);
  // The run record is unchanged while its token is the one the claiming settlement carried: not read, copied or compared.
  const runToken = tokenNow(core, keys.runAt);
  const same = runToken !== undefined && carried !== undefined && runToken === carried.run.token;
  const runBytes = same ? carried.run.bytes : readNow(core, keys.runAt);
  // A read the queue cannot answer in this turn, or a run that ended (a requeued dead step may re-open it): the slow path.
  if (runBytes === undefined || runBytes === null) return openStepSlowly(core, job, slot, runId, step, keys, carried);
  const pointer = pointerNow(core, keys, carried) ?? readPointerNow(core, keys, carried);
  if (pointer === undefined) return openStepSlowly(core, job, slot, runId, step, keys, carried);
  if (pointer === null || pointer.jobId !== job.id) return staleStep(core, job, slot);
  const run = same ? carried.run.value : decodeKnown(runBytes, carried?.run, decodeRunRecord, keys.run);
  // Read in this turn, the bytes are of the token's value; read otherwise, the token is not known.
  return opened(core, job, runId, step, pointer, keys, runBytes, run, runToken, same ? carried : undefined);
}

/** The `OpenStep` of a step of a live run, its memos where its submitting runtime keeps them; `carried` only when its run record is the one read. */
function opened(
  core: RuntimeCore,
  job: ClaimedJob,
  runId: RunId,
  step: number,
  pointer: StepPointer,
  keys: RunKeys,
  runBytes: Uint8Array,
  run: RunRecord,
  runToken: KvToken | undefined,
  carried: CarriedRun | undefined,
): OpenStep {
  // The run's memo lives where its submitting runtime keeps memos, whichever runtime works this step: the carried
  // run's when its record is the one read (the prefix is the record's), looked up once per run rather than per step.
  const memos = carried !== undefined ? carried.memos : core.memos.withPrefix(run.memoPrefix ?? core.memos.prefix);
  return new OpenStep(core, job, runId, step, pointer.name, keys, runBytes, run, runToken, memos, carried?.run);
}

/**
 * `openStep` with the reads it could not make in this turn awaited, and a
 * run found ended re-opened when this job is a requeued dead step of it
 * (a redrive through the queue).
 */
async function openStepSlowly(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  runId: RunId,
  step: number,
  keys: RunKeys,
  carried: CarriedRun | undefined,
): Promise<OpenStep | undefined> {
  let runToken = tokenNow(core, keys.runAt);
  const same = runToken !== undefined && carried !== undefined && runToken === carried.run.token;
  let runBytes: Uint8Array | null;
  if (same) runBytes = carried.run.bytes;
  else {
    const runNow = readNow(core, keys.runAt);
    // Read after an await, the bytes may be of a later value than the token's.
    if (runNow === undefined) runToken = undefined;
    runBytes = runNow !== undefined ? runNow : await core.queue.kvGet(keys.run);
  }
  if (runBytes === null && (await reopenRequeued(core, job, runId, step))) runBytes = await core.queue.kvGet(keys.run);
  let pointer = pointerNow(core, keys, carried) ?? readPointerNow(core, keys, carried);
  if (pointer === undefined) {
    const ptrBytes = await core.queue.kvGet(keys.pointer);
    pointer = ptrBytes === null ? null : decodeKnown(ptrBytes, carried?.pointer, decodeStepPointer, keys.pointer);
  }
  if (runBytes === null || pointer === null || pointer.jobId !== job.id) {
    await staleStep(core, job, slot);
    return undefined;
  }
  const run = same ? carried.run.value : decodeKnown(runBytes, carried?.run, decodeRunRecord, keys.run);
  return opened(core, job, runId, step, pointer, keys, runBytes, run, runToken, same ? carried : undefined);
}

/** A job of the step queue that is no step of a run: a terminal notification, a child's or parent's end, a no-op. */
async function settleOtherJob(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): Promise<undefined> {
  const h = job.headers;
  if (ownHeader(h, HEADER_TERMINAL) !== undefined) await processNotification(core, job, slot);
  else if (ownHeader(h, HEADER_CHILD_ENDED) !== undefined) await processChildEnded(core, job, slot);
  else if (ownHeader(h, HEADER_PARENT_ENDED) !== undefined) await processParentEnded(core, job, slot);
  else await slot.freeAfterSubmitting(core.queue.ack(job));
  return undefined;
}

async function notAStep(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): Promise<undefined> {
  await slot.freeAfterSubmitting(core.queue.deadLetter(job, "not a workflow step job: the workflow.run_id / workflow.step headers are missing or malformed"));
  return undefined;
}

/** The run terminated or moved past this job (a stale redelivery): nothing to do. */
async function staleStep(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): Promise<undefined> {
  await slot.freeAfterSubmitting(core.queue.ack(job));
  return undefined;
}

/**
 * The committed value at one of the runtime's own KV keys, read in this
 * turn when the queue offers it (`Queue.kvGetNow`); `undefined` when the
 * caller must await `kvGet`. The step path reads three records per step.
 */
export function readNow(core: RuntimeCore, key: string | KvKeyRef): Uint8Array | null | undefined {
  return core.queue.kvGetNow === undefined ? undefined : core.queue.kvGetNow(key);
}

/** The token of the value at one of the runtime's own KV keys (`Queue.kvTokenNow`), or undefined. */
export function tokenNow(core: RuntimeCore, key: string | KvKeyRef): KvToken | undefined {
  return core.queue.kvTokenNow === undefined ? undefined : core.queue.kvTokenNow(key);
}

/** The keys of run `runId`'s records, with their references when the queue makes them, and its history's prefix (checked here once per run, not per step). */
function runKeysOf(core: RuntimeCore, runId: RunId): RunKeys {
  const run = runKey(core.queueName, runId);
  const pointer = stepPointerKey(core.queueName, runId);
  const history = KvKeyPrefixRef.of(runHistoryPrefix(core.queueName, runId));
  if (core.queue.kvKeyRef === undefined) return { runId, run, pointer, runAt: run, pointerAt: pointer, history };
  return { runId, run, pointer, runAt: core.queue.kvKeyRef(run), pointerAt: core.queue.kvKeyRef(pointer), history };
}

/**
 * The carried step pointer while the key holds the value the carrying
 * settlement's commit wrote (its token, taken while no later commit had
 * applied, is the key's token): no read, copy or comparison of the bytes.
 * Undefined when that is not known: the caller reads it.
 */
function pointerNow(core: RuntimeCore, keys: RunKeys, carried: CarriedRun | undefined): StepPointer | undefined {
  const known = carried?.pointer;
  return known?.token !== undefined && tokenNow(core, keys.pointerAt) === known.token ? known.value : undefined;
}

/** The step pointer read in this turn (null: none), or undefined when the queue cannot read in this turn. */
function readPointerNow(core: RuntimeCore, keys: RunKeys, carried: CarriedRun | undefined): StepPointer | null | undefined {
  const bytes = readNow(core, keys.pointerAt);
  if (bytes === undefined || bytes === null) return bytes;
  return decodeKnown(bytes, carried?.pointer, decodeStepPointer, keys.pointer);
}

/**
 * Whether the step job's run id header `id` is a run id. The id the carried
 * keys were made for was checked then: equal to it, the header is not
 * matched against the pattern again (a chained step's header is that id).
 */
function isRunIdOf(id: string | undefined, carried: CarriedRun | undefined): id is RunId {
  return carried !== undefined && id === carried.keys.runId ? true : RunId.isValid(id);
}

/**
 * Whether a cancel of the step's run was recorded since its run record was
 * read before the runner ran. A promise only when the queue cannot read in
 * this turn.
 */
export function cancelRecorded(core: RuntimeCore, w: OpenStep): boolean | Promise<boolean> {
  const { keys, runBytes, run } = w;
  // The same token: the record was not written since it was read.
  if (w.runToken !== undefined && tokenNow(core, keys.runAt) === w.runToken) return run.cancelRequested === true;
  const key = keys.run;
  const now = readNow(core, keys.runAt);
  return now === undefined ? cancelReadLater(core, key, runBytes, run) : cancelIn(now, key, runBytes, run);
}

/** `cancelRecorded` when the queue cannot read in this turn: the closure made here, where `cancelRecorded`'s own would take a context every step. */
function cancelReadLater(core: RuntimeCore, key: string, read: Uint8Array, run: RunRecord): Promise<boolean> {
  return core.queue.kvGet(key).then((b) => cancelIn(b, key, read, run));
}

function cancelIn(b: Uint8Array | null, key: string, read: Uint8Array, run: RunRecord): boolean {
  // Gone, or another submission's: the run ended while the step ran (a repair ends a run whose step
  // is claimed). Settled as a cancel, which finds the end and writes nothing (see `runEndedMeanwhile`).
  if (b === null) return true;
  // The same bytes as read before: the record did not change. Compared by content, since
  // the engine may hold the value packed and hand out a fresh array per read.
  if (b === read || bytesEqual(b, read)) return run.cancelRequested === true;
  const now = decodeRunRecord(b, key);
  return now.cancelRequested === true || now.incarnation !== run.incarnation;
}

/**
 * Whether the run of step `w` ended while the step ran: its run record is
 * gone, or is another submission's. A repair ends a run whose step is
 * claimed and asks the step to stop; that step's settlement must leave the
 * repaired end (and any later submission of the run id) alone. Read only
 * on a settlement that found a cancel.
 */
export async function runEndedMeanwhile(core: RuntimeCore, w: OpenStep): Promise<boolean> {
  const b = await core.queue.kvGet(w.keys.run);
  if (b === null) return true;
  if (b === w.runBytes || bytesEqual(b, w.runBytes)) return false;
  try {
    return decodeRunRecord(b, w.keys.run).incarnation !== w.run.incarnation;
  } catch {
    // A damaged record is still this run's: the settlement goes on and meets it.
    return false;
  }
}
