/**
 * @module What a runner receives for one delivery of a step.
 */
import type { FlowRule } from "../../queue/admission.js";
import type { WorkflowQueue } from "../queue-port.js";
import type { LeaseHandle } from "../../queue/types.js";
import type { Building, CancelSource } from "../../queue/cancel-state.js";
import { filledWithoutPrototype } from "../../own-fields.js";
import { lastAttemptAnswer } from "../../queue/claimed-job.js";
import { MemoryStore } from "../../store/memory-store.js";
import type { ObjectStore } from "../../store/object-store.js";
import { EffectsHandle, type KvReadHandle } from "./effects-handle.js";
import { Memo } from "../memo/memo.js";
import { RunId } from "../runs/run-id.js";
import type { StepOutcome } from "./step-outcome.js";
import { DETACHED_CHILDREN, type ChildRuns } from "../children/child-runs.js";
import { readDetachedOptions } from "./detached-options.js";

/**
 * One delivery of a queue job of a run: who it is for and the handles it
 * works through.
 */
export interface Delivery {
  readonly runId: RunId;
  /** The submitter's headers (the reserved `workflow.*` ones excluded). */
  readonly headers: Readonly<Record<string, string>>;
  /** The queue job being delivered. */
  readonly jobId: string;
  /** This delivery's attempt number, from 1. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Whether a transient error from this attempt dead-letters the step. */
  isLastAttempt(): boolean;
  /** Aborted when the run is cancelled from outside; a runner may return at once. */
  readonly cancelSignal: AbortSignal;
  /** Extends the step's lease; call `ensureAtLeast` before a slow call. */
  readonly lease: LeaseHandle;
  /** Durable memo scoped to `(runId, step)`. */
  readonly memo: Memo;
  /** Durable memo shared by every step of the run. */
  readonly runMemo: Memo;
  /** Caller KV effects applied with the step's settlement. */
  readonly effects: EffectsHandle;
  /** Committed caller KV state. */
  readonly kv: KvReadHandle;
  /**
   * Child runs: `children.start({ input })` starts a run on this runtime as
   * this run's child; continue on its `completionKey` to wait for its end.
   */
  readonly children: ChildRuns;
}

/** A step: a delivery plus its number, payload and signal. */
export interface Step extends Delivery {
  /** Zero-based step number. */
  readonly stepNumber: number;
  readonly payload: Uint8Array;
  /**
   * `undefined` when the step was not continued on a signal, the signal's
   * payload when one arrived, `null` when the wait timed out.
   */
  readonly signal: Uint8Array | null | undefined;
}

/** Options of {@link Delivery.detached} and {@link Step.detached}. */
export interface DetachedOptions {
  runId?: RunId | string;
  headers?: Record<string, string>;
  jobId?: string;
  attempt?: number;
  maxAttempts?: number;
  stepNumber?: number;
  signal?: Uint8Array | null;
  cancelSignal?: AbortSignal;
  /** Object store behind the memos. Default: a fresh `MemoryStore`. */
  store?: ObjectStore;
  memoPrefix?: string;
  /** Committed KV state `kv.get` answers from. */
  kv?: Record<string, Uint8Array>;
}

const DETACHED_LEASE: LeaseHandle = Object.freeze({
  async ensureAtLeast(): Promise<void> {},
  expiresAt: Number.MAX_SAFE_INTEGER,
});

/** The parts the runtime assembles into a delivery. */
export interface DeliveryParts {
  runId: RunId;
  headers: Readonly<Record<string, string>>;
  jobId: string;
  attempt: number;
  maxAttempts: number;
  /** Where `cancelSignal` comes from, read only when the delivery's is (a claimed job makes its signal on first read). */
  cancel: CancelSource;
  lease: LeaseHandle;
  memo: Memo;
  runMemo: Memo;
  effects: EffectsHandle;
  kv: KvReadHandle;
  children: ChildRuns;
}

/**
 * A base whose constructor hands back the object it is given: a subclass's
 * private fields are then defined on that object, with no key, descriptor,
 * prototype or printed form of its own.
 */
class ObjectGivenBack {
  constructor(o: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the point of the class (see above).
    return o;
  }
}

/**
 * Where a delivery's `cancelSignal` comes from: a private slot of the
 * delivery itself. Set by assignment, where the queue's `defineCancelSignal`
 * takes an `Object.defineProperty` call for its hidden symbol slot (a
 * runtime call with a descriptor made per step). Only the getter below
 * reads it.
 */
class CancelSlot extends ObjectGivenBack {
  readonly #source: CancelSource;

  private constructor(o: object, source: CancelSource) {
    super(o);
    this.#source = source;
  }

  /** Gives `o` its source; once, before `o` is frozen. */
  static give(o: object, source: CancelSource): void {
    new CancelSlot(o, source);
  }

  static sourceOf(o: object): CancelSource {
    return (o as CancelSlot).#source;
  }
}

// One getter and descriptor for every delivery, so V8 reuses one hidden-class transition for them all.
const CANCEL_SIGNAL: PropertyDescriptor = {
  get(this: object): AbortSignal {
    return CancelSlot.sourceOf(this).cancelSignal;
  },
  enumerable: true,
};

/**
 * Adds `target`'s enumerable `cancelSignal`, read from `source` when it is
 * read (so a copy by spread still carries the signal, and a claimed job
 * makes its signal only then). Called where `cancelSignal` belongs in the
 * key order, before freezing.
 */
function defineCancelSignal(target: object, source: CancelSource): void {
  Object.defineProperty(target, "cancelSignal", CANCEL_SIGNAL);
  CancelSlot.give(target, source);
}

/** Builds a {@link Delivery} from its parts (fields listed, not spread: see `deliveryOf`). */
export function makeDelivery(p: DeliveryParts): Delivery {
  return Object.freeze(deliveryOf(p));
}

/**
 * Whether `Object.prototype` holds the name of a field `jobStepFields` assigns:
 * a setter there would take the step's payload or headers (the runner then
 * reads the setter's getter) and a read-only field would refuse the
 * assignment. Each name written out: a few ns per step.
 */
function prototypeHoldsStepField(): boolean {
  const p = Object.prototype;
  return (
    "runId" in p ||
    "headers" in p ||
    "jobId" in p ||
    "attempt" in p ||
    "maxAttempts" in p ||
    "lease" in p ||
    "memo" in p ||
    "runMemo" in p ||
    "effects" in p ||
    "kv" in p ||
    "children" in p ||
    "isLastAttempt" in p ||
    "stepNumber" in p ||
    "payload" in p ||
    "signal" in p
  );
}

/** What a step of a claimed job holds of the job itself: its id, counts, cancel source and lease. */
export type StepJob = CancelSource & {
  readonly id: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly lease: LeaseHandle;
  isLastAttempt(): boolean;
};

/**
 * Builds the {@link Step} of a claimed job (or of a detached one): the
 * job's own fields read from the job, so no parts object is made per step.
 */
export function makeJobStep(
  runId: RunId,
  headers: Readonly<Record<string, string>>,
  job: StepJob,
  memo: Memo,
  runMemo: Memo,
  effects: EffectsHandle,
  kv: KvReadHandle,
  children: ChildRuns,
  stepNumber: number,
  payload: Uint8Array,
  signal: Uint8Array | null | undefined,
): Step {
  const step = prototypeHoldsStepField()
    ? filledWithoutPrototype(jobStepFields, runId, headers, job, memo, runMemo, effects, kv, children, stepNumber, payload, signal)
    : new JobStepFields(runId, headers, job, memo, runMemo, effects, kv, children, stepNumber, payload, signal);
  return Object.freeze(step);
}

/**
 * A step's fields, in their key order, unfrozen: `deliveryOf`'s and the
 * step's own. Built by `new` for every step run: V8 then sizes the object
 * for every field this constructor assigns, where an object literal of the
 * first five grew a separate property store four times over (about 200 B
 * per step, most of it garbage at once). Its prototype is `Object.prototype`
 * (set below), so the step is a plain object as before: the same prototype,
 * `constructor`, keys, descriptors and printed form.
 */
function jobStepFields(
  this: Building<Step>,
  runId: RunId,
  headers: Readonly<Record<string, string>>,
  job: StepJob,
  memo: Memo,
  runMemo: Memo,
  effects: EffectsHandle,
  kv: KvReadHandle,
  children: ChildRuns,
  stepNumber: number,
  payload: Uint8Array,
  signal: Uint8Array | null | undefined,
): void {
  this.runId = runId;
  this.headers = headers;
  this.jobId = job.id;
  this.attempt = job.attempt;
  this.maxAttempts = job.maxAttempts;
  defineCancelSignal(this, job);
  this.lease = job.lease;
  this.memo = memo;
  this.runMemo = runMemo;
  this.effects = effects;
  this.kv = kv;
  this.children = children;
  // The claimed job's own (a field every `StepJob` has): the same counts, and no closure of its own per step.
  this.isLastAttempt = job.isLastAttempt;
  this.stepNumber = stepNumber;
  this.payload = payload;
  this.signal = signal;
}
jobStepFields.prototype = Object.prototype;
const JobStepFields = jobStepFields as unknown as new (...args: Parameters<typeof jobStepFields>) => Building<Step>;

/**
 * The delivery's fields, in their key order, unfrozen: the first fields of a step (`jobStepFields`),
 * for a detached delivery. Fields listed, not spread (V8 builds a spread copy of `p` plus a
 * closure field through its slow path), and `cancelSignal` added by `defineCancelSignal`.
 */
function deliveryOf(p: DeliveryParts): Building<Delivery> {
  // Assigned into an object that inherits nothing, so a setter on `Object.prototype` takes no field (see `prototypeHoldsStepField`).
  const d = Object.create(null) as Building<Delivery>;
  d.runId = p.runId;
  d.headers = p.headers;
  d.jobId = p.jobId;
  d.attempt = p.attempt;
  d.maxAttempts = p.maxAttempts;
  defineCancelSignal(d, p.cancel);
  d.lease = p.lease;
  d.memo = p.memo;
  d.runMemo = p.runMemo;
  d.effects = p.effects;
  d.kv = p.kv;
  d.children = p.children;
  d.isLastAttempt = lastAttemptOf(p.attempt, p.maxAttempts);
  return Object.setPrototypeOf(d, Object.prototype) as Building<Delivery>;
}

/** A detached delivery's `isLastAttempt`: the claimed job's shared answers (see `lastAttemptAnswer`), its counts fixed at build. */
function lastAttemptOf(attempt: number, maxAttempts: number): () => boolean {
  return lastAttemptAnswer(attempt >= maxAttempts);
}

function detachedParts(opts: DetachedOptions, step: number): DeliveryParts {
  const runId = opts.runId === undefined ? RunId.generate() : RunId.parse(opts.runId);
  const store = opts.store ?? new MemoryStore();
  const prefix = opts.memoPrefix ?? "detached-memo";
  const kv = new Map(Object.entries(opts.kv ?? {}));
  return {
    runId,
    headers: { ...(opts.headers ?? {}) },
    jobId: opts.jobId ?? "detached",
    attempt: opts.attempt ?? 1,
    maxAttempts: opts.maxAttempts ?? 3,
    cancel: { cancelSignal: opts.cancelSignal ?? new AbortController().signal },
    lease: DETACHED_LEASE,
    memo: new Memo(store, prefix, runId, step),
    runMemo: new Memo(store, prefix, runId, "run"),
    effects: new EffectsHandle(),
    kv: { get: async (key) => kv.get(key) ?? null },
    children: DETACHED_CHILDREN,
  };
}

/** Builders of deliveries bound to no queue, for tests. */
export const Delivery = {
  /** A delivery bound to no queue: a no-op lease, memos over `opts.store` (default: a fresh memory store). */
  detached(given?: DetachedOptions): Delivery {
    const opts = readDetachedOptions(given, "Delivery.detached");
    return makeDelivery(detachedParts(opts, opts.stepNumber ?? 0));
  },
} as const;

/** Builders of steps bound to no queue, for tests. */
export const Step = {
  /**
   * A step bound to no queue, for unit-testing a runner.
   *
   * @example
   * const out = await runner.runStep(Step.detached(new TextEncoder().encode("hi")));
   */
  detached(payload: Uint8Array, given?: DetachedOptions): Step {
    const opts = readDetachedOptions(given, "Step.detached");
    const n = opts.stepNumber ?? 0;
    const p = detachedParts(opts, n);
    const job: StepJob = {
      cancelSignal: p.cancel.cancelSignal,
      id: p.jobId,
      attempt: p.attempt,
      maxAttempts: p.maxAttempts,
      lease: p.lease,
      isLastAttempt: lastAttemptOf(p.attempt, p.maxAttempts),
    };
    return makeJobStep(p.runId, p.headers, job, p.memo, p.runMemo, p.effects, p.kv, p.children, n, payload, opts.signal);
  },
} as const;

/**
 * The user's per-step logic: bytes in, a {@link StepOutcome} out. Throw
 * `StepError.transient` / `StepError.permanent` to fail the step. Steps are
 * delivered at least once, so `runStep` must be idempotent for the same
 * `(runId, stepNumber)`.
 */
export interface StepRunner {
  runStep(step: Step): Promise<StepOutcome>;
  /**
   * Called once by `WorkflowRuntime.run` before the worker claims anything;
   * a rejection stops the worker from starting (the generated dispatcher
   * checks its contracts against the store here).
   */
  beforeStart?(ctx: RunnerStartContext): Promise<void>;
  /**
   * Header names whose values are secrets: the runtime replaces them in
   * log records and spans. The generated dispatcher lists the headers its
   * specs mark `sensitive: true`.
   */
  readonly sensitiveHeaders?: readonly string[];
  /**
   * Names a step payload for run listings and histories: the generated
   * dispatcher returns the typed workflow (or job) and the step name. Called
   * when a step is submitted or continued, so it must be cheap; it must not
   * throw (return `undefined` for a payload it cannot name).
   */
  describe?(payload: Uint8Array): StepDescription | undefined;
  /**
   * Flow rules of the runs this runner works, by rule name (see
   * `RunOptions.flow`): the runtime defines them on its step queue when it
   * is built. The generated dispatcher returns the `concurrency` and
   * `rate_limit` its specs declare per job and workflow.
   */
  flowRules?(): Readonly<Record<string, FlowRule>>;
}

/** What `StepRunner.describe` says of a step payload. */
export interface StepDescription {
  readonly kind: "workflow" | "job";
  /** The typed workflow's or job's name. */
  readonly name: string;
  /** The step's name (typed workflows). */
  readonly step?: string;
}

/** What `StepRunner.beforeStart` is given: the runtime's queue and step queue name. */
export interface RunnerStartContext {
  readonly queue: WorkflowQueue;
  readonly queueName: string;
}
