/**
 * @module The durable task queue: public surface.
 */
export { Queue, type RecoveryReport } from "./queue.js";
export { QueueReader } from "./reader.js";
export { SettlementEffects, type KvOp } from "./effects.js";
export { ExpiryIndex, type ExpiryEntry, type KvScanner } from "./expiry-index.js";
export { runWorker, type Worker, type RunWorkerOptions } from "./worker.js";
export { detachedLease, LEASE_MARGIN_MS } from "./claimed-job.js";
export type { QueueView, KvPage, KvScanOptions, ListJobsOptions } from "./view.js";
export {
  Priority,
  backoffDelay,
  DEFAULT_QUEUE_CONFIG,
  type BackoffConfig,
  type QueueConfig,
  type OpenOptions,
  type DeadLetteredEvent,
  type ResolvedQueueConfig,
} from "./config.js";
export {
  ADMISSION_SCAN_BUDGET,
  type ConcurrencyConfig,
  type ResolvedConcurrency,
  type RateLimitConfig,
  type ResolvedRateLimit,
  type DebounceConfig,
  type ResolvedDebounce,
  MAX_DEBOUNCE_MS,
  type FlowRule,
  FLOW_RULE_HEADER,
  FLOW_CONCURRENCY_KEY_HEADER,
  FLOW_RATE_KEY_HEADER,
} from "./admission.js";
export { SUPERSEDED_RETENTION_MS } from "./transitions.js";
export { JOB_ATTEMPT_HISTORY_LIMIT } from "./attempt-history.js";
export {
  MAX_KV_VALUE_SIZE,
  MAX_KV_KEY_BYTES,
  MAX_QUEUE_NAME_LEN,
  MAX_JOB_ID_LEN,
  MAX_DEDUP_KEY_BYTES,
  validateQueueName,
  validateJobId,
} from "./names.js";
export { MAX_HEADERS, MAX_HEADER_NAME_BYTES, MAX_HEADERS_BYTES } from "./headers.js";
export { DEFAULT_MAX_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES_LIMIT } from "./payload-limit.js";
export {
  ClaimLostError,
  DuplicateJobIdError,
  KvValueTooLargeError,
  PayloadTooLargeError,
  CancelRequestedError,
  PayloadMissingError,
  JobRecordDamagedError,
  PermanentError,
  StatsPlanChangedError,
} from "./errors.js";
export type { StatsRecount, RecountStatsOptions } from "./stats-recount.js";
export type {
  EnqueueOptions,
  EnqueueOutcome,
  EnqueueItem,
  LeaseHandle,
  ClaimedJob,
  NackOptions,
  DeadLetterOptions,
  NackOutcome,
  CancelOutcome,
  WakeOutcome,
  JobInfo,
  JobState,
  JobAttempt,
  AttemptOutcome,
  QueueStats,
  Page,
  KvEntry,
  CompletionResult,
  WaitingReason,
  ClaimNext,
  AckedClaimingNext,
} from "./types.js";
