/**
 * @module The part of the queue the workflow runtime uses.
 *
 * A narrow role interface: `Queue` satisfies it structurally, and naming
 * exactly what the runtime relies on keeps the layer boundary visible.
 */
import type { ShardPlacement } from "../queue/shard-layout.js";
import type { KvToken } from "../queue/queue.js";
import type { KvKeyRef } from "../queue/user-keys.js";
import type { BorrowedBytes } from "../queue/borrowed-bytes.js";
import type { SubmittedAck } from "../queue/claim-settle.js";
import type { TimedClock } from "../clock.js";
import type { SettlementEffects } from "../queue/effects.js";
import type { KvExpectation } from "../queue/kv-ops.js";
import type {
  AckedClaimingNext,
  CancelOutcome,
  ClaimNext,
  ClaimedJob,
  CompletionResult,
  DeadLetterOptions,
  EnqueueOptions,
  EnqueueOutcome,
  NackOptions,
  NackOutcome,
} from "../queue/types.js";
import type { KvPage, KvScanOptions, QueueView } from "../queue/view.js";
import type { DeadLetteredEvent } from "../queue/config.js";
import type { FlowRule } from "../queue/admission.js";

/** What the workflow runtime and job runner call on a queue; `Queue` satisfies it. */
export interface WorkflowQueue {
  readonly clock: TimedClock;
  /** Which shard of a sharded store the queue is (`Queue.shard`): the runs a runtime creates itself route there (see `shard-placement`). */
  readonly shard?: ShardPlacement | undefined;
  /**
   * See `Queue.nextJobId`. An id staged as drawn (`RebuiltEnqueueOptions.jobIdDrawn`, `drawnIdOptions`) skips the look-up only
   * on the queue that handed it out: one drawn from another queue than the one that commits it is looked up.
   */
  nextJobId(): string;
  enqueueWithEffects(
    queueName: string,
    payload: Uint8Array,
    opts: EnqueueOptions,
    effects: SettlementEffects,
  ): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] }>;
  /** @internal See `Queue.enqueueSuperseding`; needed for debounced runs only (`unchanged`: a debounced child's start). */
  enqueueSuperseding?(
    queueName: string,
    payload: Uint8Array,
    opts: EnqueueOptions,
    effects: SettlementEffects,
    expected: { jobId: string | undefined; effects: SettlementEffects },
    unchanged?: readonly KvExpectation[],
  ): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] } | "raced">;
  /** @internal See `Queue.enqueueIfUnchanged`: a child run's start, held to its parent's step being current. */
  enqueueIfUnchanged(
    queueName: string,
    payload: Uint8Array,
    opts: EnqueueOptions,
    effects: SettlementEffects,
    unchanged: readonly KvExpectation[],
  ): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] } | "raced">;
  /** @internal See `Queue.debounceHolder`; needed for debounced runs only. */
  debounceHolder?(queueName: string, key: string): { jobId: string; headers: Readonly<Record<string, string>> } | undefined;
  /** @internal See `Queue.flowConcurrencyLimit`. */
  flowConcurrencyLimit?(queueName: string, rule: string): number | undefined;
  claimBatch(queueName: string, max: number, leaseMs?: number): Promise<ClaimedJob[]>;
  ack(job: ClaimedJob, effects?: SettlementEffects): Promise<EnqueueOutcome[]>;
  /**
   * @internal An ack that hands the enqueue at `claimNext.index` back already
   * claimed, in the same commit, when the queue allows it (`Queue.ackClaimingNext`).
   * Optional: without it the runtime acks, and the next step is claimed as any job.
   */
  ackClaimingNext?(job: ClaimedJob, effects: SettlementEffects, claimNext: ClaimNext): Promise<AckedClaimingNext>;
  /** @internal `ackClaimingNext` whose commit the caller awaits itself (`Queue.ackClaimingNextInTurn`); optional: without it the runtime calls `ackClaimingNext`. */
  ackClaimingNextInTurn?(job: ClaimedJob, effects: SettlementEffects, claimNext: ClaimNext): SubmittedAck | Promise<AckedClaimingNext>;
  /** @internal Gives back a claim that will not be worked (`Queue.releaseClaim`). */
  releaseClaim?(job: ClaimedJob): void;
  nack(job: ClaimedJob, error: string, effects?: SettlementEffects, opts?: NackOptions): Promise<NackOutcome>;
  deadLetter(job: ClaimedJob, error: string, effects?: SettlementEffects, opts?: DeadLetterOptions): Promise<EnqueueOutcome[]>;
  wakeScheduled(queueName: string, jobId: string, attached?: Uint8Array, effects?: SettlementEffects): Promise<boolean>;
  cancelJob(jobId: string, effects?: SettlementEffects): Promise<CancelOutcome>;
  /** Moves a dead job back to pending (a redrive of the run it is the final step of). */
  requeueDead(jobId: string): Promise<boolean>;
  kvGet(key: string): Promise<Uint8Array | null>;
  /** @internal `kvGet` answered in the caller's turn (`Queue.kvGetNow`); optional: without it the runtime awaits `kvGet`. */
  kvGetNow?(key: string | KvKeyRef): Uint8Array | null;
  /** @internal `kvGet` lent for one decode, without the copy (`Queue.kvBorrowNow`); optional: without it the runtime awaits `kvGet`. */
  kvBorrowNow?(key: string | KvKeyRef): BorrowedBytes | null;
  /** @internal A token for `key`'s committed value (`Queue.kvTokenNow`); optional: without it the runtime reads and compares the bytes. */
  kvTokenNow?(key: string | KvKeyRef): KvToken | undefined;
  /** @internal The token `kvTokenNow` gives while `key` holds the bytes `value` a commit put (`Queue.kvTokenOfPut`); optional: without it the runtime reads the token. */
  kvTokenOfPut?(key: string | KvKeyRef, value: Uint8Array): KvToken | undefined;
  /** @internal `key` checked once, for the calls above and the step pointer's staged put (`Queue.kvKeyRef`); optional: without it the runtime passes the key. */
  kvKeyRef?(key: string): KvKeyRef;
  /** @internal Whether commits copy the values staged into them (`Queue.copiesCommittedValues`); absent means they may keep them, and the runtime stages arrays of their own. */
  readonly copiesCommittedValues?: boolean;
  kvPut(key: string, value: Uint8Array): Promise<void>;
  kvDelete(key: string): Promise<void>;
  kvCompareAndPut(key: string, expected: Uint8Array | null, value: Uint8Array): Promise<boolean>;
  kvCompareAndDelete(key: string, expected: Uint8Array): Promise<boolean>;
  kvCompareAndApply(expected: readonly KvExpectation[], effects: SettlementEffects): Promise<boolean>;
  kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage>;
  view(): QueueView;
  waitForCompletion(jobId: string, opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<CompletionResult>;
  /** Calls `listener` for every job the reaper or recovery dead-letters; returns the unsubscribe function. */
  onDeadLettered(listener: (e: DeadLetteredEvent) => void): () => void;
  /** Jobs recovery dead-lettered when the queue was opened (before any listener could subscribe). */
  readonly recovery: { readonly deadLettered: readonly string[] };
  /** @internal */
  workEpoch(queueName: string): number;
  /** @internal */
  waitForWork(queueName: string, epoch: number, signal?: AbortSignal): Promise<void>;
  readonly closed: boolean;
  /** @internal Aborted when the queue closes or its engine fails; `reason` is the `ClosedError` waiters settle with. */
  readonly closedSignal: AbortSignal;
  /** @internal Declares caller KV prefixes used heavily (see `Queue.declareKeyHeads`); optional: a queue without it searches as before. */
  declareKeyHeads?(prefixes: readonly string[]): void;
  /** Defines flow rules of a queue (see `Queue.defineFlowRules`); optional for queues that have none. */
  defineFlowRules?(queueName: string, rules: Readonly<Record<string, FlowRule>>): void;
  /** Resolves when every commit made so far is durable; at once when none is in flight. */
  flush(): Promise<void>;
  /** Stops the queue's background work and closes its engine once what was committed is durable. */
  close(): Promise<void>;
}

export type { DeadLetteredEvent };
