/**
 * @module taquba: durable execution for TypeScript on object storage.
 *
 * What applications import. Grouped by layer, top to bottom, each name
 * listed on purpose. The other entries of the package: `taquba/testing`
 * (mock clock, fault/latency/counting stores), `taquba/generated` (what
 * generated code imports) and `taquba/codegen` (the generator as a
 * library). Test tools and `define*` stay here too, because the API
 * contract names them here.
 */

// Errors and time
export {
  TAQUBA_ERROR_CODES,
  TaqubaError,
  PreconditionFailedError,
  ValidationError,
  StoreCorruptedError,
  FencedError,
  ClosedError,
  StoreUnavailableError,
  StoreRequestError,
  MissingDependencyError,
  UnsupportedStoreError,
  ValueNotWarmedError,
  CompactionTooLargeError,
} from "./errors.js";
export type { TaqubaErrorCode } from "./errors.js";
export { SystemClock, MockClock } from "./clock.js";
export type { Clock, TimedClock } from "./clock.js";
export { MAX_DELAY_MS, MAX_INSTANT_MS } from "./time-bounds.js";

// Object stores
export type { ObjectStore, StoredObject, PutOptions, ListedObject, ListOptions } from "./store/object-store.js";
export { MemoryStore } from "./store/memory-store.js";
export { validateObjectKey } from "./store/keys.js";
export { LocalStore } from "./store/local-store.js";
export { S3Store, isRetryableS3Error } from "./store/s3-store.js";
export type { S3StoreOptions, S3RetryOptions } from "./store/s3-store.js";
export { AzureBlobStore, AZURITE_ACCOUNT, AZURITE_ACCOUNT_KEY, isRetryableAzureError } from "./store/azure-blob-store.js";
export type { AzureBlobStoreOptions, AzureTokenCredential } from "./store/azure-blob-store.js";
export { GcsStore, isRetryableGcsError } from "./store/gcs-store.js";
export type { GcsStoreOptions } from "./store/gcs-store.js";
export type { StoreRetryOptions } from "./store/request-retry.js";
export { openStore } from "./store/open-store.js";
export type { OpenStoreOptions } from "./store/open-store.js";
export { withFaults, InjectedFaultError } from "./store/with-faults.js";
export type { FaultOptions, FaultyStore, StoreOperation } from "./store/with-faults.js";
export { withLatency } from "./store/with-latency.js";
export type { LatencyOptions } from "./store/with-latency.js";
export { withCounting } from "./store/with-counting.js";
export type { CountingStore, StoreCounts } from "./store/with-counting.js";

// Engine
export { Engine } from "./engine/engine.js";
export type { EngineOptions, ScanOptions, CommitOptions, EngineStats, PageValuesOptions } from "./engine/engine.js";
export { EngineReader } from "./engine/engine-reader.js";
export type { EngineReaderOptions } from "./engine/engine-reader.js";
export { WriteBatch } from "./engine/write-batch.js";
export type { BatchOp } from "./engine/write-batch.js";
export { UnsupportedFormatError } from "./engine/format-error.js";
export type { RetryPolicy as EngineRetryOptions } from "./engine/retry.js";

// Queue
export {
  Queue,
  QueueReader,
  SettlementEffects,
  ExpiryIndex,
  runWorker,
  Priority,
  DEFAULT_QUEUE_CONFIG,
  MAX_KV_VALUE_SIZE,
  MAX_KV_KEY_BYTES,
  MAX_QUEUE_NAME_LEN,
  MAX_JOB_ID_LEN,
  MAX_DEDUP_KEY_BYTES,
  MAX_DEBOUNCE_MS,
  SUPERSEDED_RETENTION_MS,
  JOB_ATTEMPT_HISTORY_LIMIT,
  FLOW_RULE_HEADER,
  FLOW_CONCURRENCY_KEY_HEADER,
  FLOW_RATE_KEY_HEADER,
  MAX_HEADERS,
  MAX_HEADER_NAME_BYTES,
  MAX_HEADERS_BYTES,
  DEFAULT_MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_BYTES_LIMIT,
  validateQueueName,
  validateJobId,
  ClaimLostError,
  DuplicateJobIdError,
  KvValueTooLargeError,
  PayloadTooLargeError,
  CancelRequestedError,
  PayloadMissingError,
  JobRecordDamagedError,
  PermanentError,
  StatsPlanChangedError,
} from "./queue/index.js";
export type {
  RecoveryReport,
  KvOp,
  ExpiryEntry,
  KvScanner,
  Worker,
  RunWorkerOptions,
  QueueView,
  KvPage,
  KvScanOptions,
  ListJobsOptions,
  BackoffConfig,
  QueueConfig,
  OpenOptions,
  DeadLetteredEvent,
  ResolvedQueueConfig,
  ConcurrencyConfig,
  ResolvedConcurrency,
  RateLimitConfig,
  ResolvedRateLimit,
  DebounceConfig,
  ResolvedDebounce,
  FlowRule,
  WaitingReason,
  EnqueueOptions,
  EnqueueOutcome,
  EnqueueItem,
  LeaseHandle,
  ClaimedJob,
  NackOptions,
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
  ClaimNext,
  AckedClaimingNext,
  StatsRecount,
  RecountStatsOptions,
} from "./queue/index.js";

// Workflow
export { RunId, MAX_RUN_ID_LEN } from "./workflow/runs/run-id.js";
export {
  InputMismatchError,
  RunIdDrawsTakenError,
  RunNotFoundError,
  RunNotRetryableError,
  RunNotDamagedError,
  RepairPlanChangedError,
  ChildResultUnavailableError,
  ScheduleNotFoundError,
  ScheduleInputError,
  InvalidRunIdError,
  ReservedHeaderError,
  ReservedKeyError,
  InvalidEffectError,
  EffectsSealedError,
  StepError,
  MemoUnavailableError,
} from "./workflow/workflow-errors.js";
export {
  MAX_RUN_HEADERS,
  MAX_RUN_HEADERS_BYTES,
  MAX_CORRELATION_KEY_BYTES,
  MAX_SIGNAL_PAYLOAD_BYTES,
  MAX_MEMO_KEY_BYTES,
  MAX_MEMO_VALUE_BYTES,
  MAX_RUN_PAYLOAD_BYTES,
  MAX_GROUP_KEY_BYTES,
  MAX_GROUP_ID_BYTES,
  MAX_GROUP_MEMBERS,
  MAX_GROUP_INPUT_BYTES,
  MAX_CONCURRENT_STEPS,
} from "./workflow/limits.js";
export type { StepErrorExposure, StepErrorKind } from "./workflow/workflow-errors.js";
export { StepOutcome, Trigger } from "./workflow/steps/step-outcome.js";
export { RESERVED_HEADER_PREFIX, RESERVED_KV_PREFIX, HEADER_RUN_ID, HEADER_STEP, RUN_OUTCOME_MEMO_KEY } from "./workflow/records/reserved.js";
export type {
  TerminalStatus,
  RunErrorKind,
  RunState,
  ActiveRunState,
  Termination,
  RunStatus,
  RunOutcome,
  RunEnd,
  ResultUnavailableReason,
  RunOptions,
  RunFlow,
  RunDebounce,
  RunSpec,
  SubmitOutcome,
  SignalOutcome,
  RetryRunOptions,
  RetryOutcome,
} from "./workflow/runs/run-types.js";
export { RUN_LIST_STATES, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from "./workflow/runs/run-listing.js";
export type { RepairOutcome, RepairRunOptions, RepairAction } from "./workflow/runs/repair.js";
export type { RunDamage, RunRecordKind } from "./workflow/runs/run-damage.js";
export type { RunListState, RunRowState, ListRunsOptions, RunSignalWait, RunRow, UnreadableRun, RunPage } from "./workflow/runs/run-listing.js";
export {
  HISTORY_ATTEMPTS_PER_STEP,
  HISTORY_STEPS_PER_RUN,
  HISTORY_KEYS_PER_STEP,
  HISTORY_ERROR_CHARS,
  HISTORY_STACK_CHARS,
} from "./workflow/runs/run-history.js";
export type {
  StepAttemptOutcome,
  AttemptHistory,
  StepTransitionHistory,
  SignalReceipt,
  StepHistory,
  RunEndHistory,
  RedriveHistory,
  RunHistory,
} from "./workflow/runs/run-history.js";
export { Memo, MemoStore } from "./workflow/memo/memo.js";
export { EffectsHandle, TerminalEffects } from "./workflow/steps/effects-handle.js";
export type { KvReadHandle } from "./workflow/steps/effects-handle.js";
export { NoopTerminalHook } from "./workflow/terminal-hook/terminal-hook.js";
export type { TerminalHook } from "./workflow/terminal-hook/terminal-hook.js";
export { Delivery, Step } from "./workflow/steps/delivery.js";
export type { DetachedOptions, RunnerStartContext, StepRunner, StepDescription } from "./workflow/steps/delivery.js";
export { WorkflowRuntime } from "./workflow/workflow-runtime.js";
export { WorkflowRuntimeBuilder } from "./workflow/runtime-builder.js";
export { NO_WORKER_WARNING_MS } from "./workflow/workflow-runtime.js";
export type { RunnerHandle, Shutdown, CloseOptions } from "./workflow/workflow-runtime.js";
export { DEFAULT_CLOSE_TIMEOUT_MS } from "./workflow/worker-lifecycle.js";
export { consoleLogger, REDACTED, type Logger, type LogLevel, type WorkflowLogger } from "./logger.js";
export { WorkflowView } from "./workflow/runs/workflow-view.js";
export type { WorkflowReadSource } from "./workflow/runs/workflow-view.js";
export type { WorkflowQueue } from "./workflow/queue-port.js";

// Run groups
export { RunGroup } from "./workflow/groups/run-group.js";
export { Schedules, MAX_BACKFILL_TICKS } from "./workflow/schedules/schedules.js";
export type { ScheduleList, UnreadableSchedule } from "./workflow/schedules/schedules.js";
export { bindScheduleInput, defineSchedule, scheduleSpecOf, upsertSchedules } from "./typed/schedule-definition.js";
export type { ScheduleDefinition, ScheduleInputTick, ScheduleTarget, TypedScheduleInputHandler } from "./typed/schedule-definition.js";
export { MISFIRE_GRACE_MS } from "./workflow/schedules/schedule-types.js";
export type {
  CatchUpPolicy,
  OverlapPolicy,
  ComputedTickRun,
  ScheduleFailure,
  ScheduleFire,
  ScheduleInfo,
  ScheduleInputHandler,
  ScheduleSpec,
  ScheduleTick,
  ScheduledRun,
} from "./workflow/schedules/schedule-types.js";
export type { GroupMember, GroupSubmitOutcome, MemberSubmission, MemberResult, GroupStatus } from "./workflow/groups/run-group.js";
export { GroupNotFoundError, GroupActiveError, GroupMemberDamagedError } from "./workflow/groups/group-errors.js";
export type { ListGroupsOptions, GroupDamage, GroupMemberCounts, GroupRow, GroupPage, UnreadableGroup } from "./workflow/groups/group-listing.js";

// Jobs
export { createValidator, formatIssue } from "./contract/validator.js";
export type {
  Validator,
  ValidationIssue,
  RawValidateFunction,
  RawValidationError,
  StandardSchemaV1,
  StandardSchemaResult,
  StandardSchemaIssue,
} from "./contract/validator.js";
export { defineJob, defineSignal, defineHeaders, JobFailure } from "./contract/job-definition.js";
export type { FlowControl, FlowControlSpec } from "./contract/flow-control.js";
export type {
  HeaderValues,
  HeaderSetDefinition,
  JobDefinition,
  SignalDefinition,
  JobOutcome,
  JobHandle,
  JobSubmitOptions,
  JobSubmitter,
  SignalDelivery,
  SignalSender,
  JobContext,
  JobHandler,
  JobRegistrar,
} from "./contract/job-definition.js";
export { JobRunner, JobRunnerBuilder } from "./typed/job-runner.js";
export type { JobRunnerOptions } from "./typed/job-runner.js";
export type { JobNotice } from "./jobs/job-notice.js";
export type { ListJobRunsOptions } from "./jobs/job-listing.js";
export { RunnerJobHandle } from "./jobs/job-handle.js";
export { JobGroup } from "./jobs/job-group.js";
export type { JobMemberResult, JobGroupSubmitOptions } from "./jobs/job-group.js";
export { StateKey, StateNotRegisteredError, jobContext } from "./jobs/job-context.js";
export type { RunnerJobContext, JobHost } from "./jobs/job-context.js";
export { JobFailedError, JobCancelledError, JobNotFoundError, JobsNotAttachedError, JobsAlreadyAttachedError } from "./jobs/job-errors.js";

// Typed workflows
export { defineWorkflow } from "./contract/workflow-definition.js";
export type { WorkflowDefinition, WorkflowStepDefinition, WorkflowStepSpec, AnyWorkflowDefinition } from "./contract/workflow-definition.js";
export { ContractTooOldError } from "./typed/contract-guard.js";
export type { ContractEntry } from "./typed/contract-guard.js";
export type { StepTransition, Continuation, SignalContinuation, SignalWaitOptions, ChildContinuation } from "./contract/step-transition.js";
export type { ChildWorkflow, ChildRun, ChildStartOptions, ChildOutcome, ChildWaitTimedOut } from "./typed/child-workflows.js";
export { childRunId } from "./workflow/children/child-runs.js";
export type { ChildRuns, ChildRunSpec, ChildRunStart, ParentClosePolicy } from "./workflow/children/child-runs.js";
export type { WorkflowStepContext } from "./typed/step-context.js";
export { WorkflowDispatcher, WorkflowDispatcherBuilder } from "./typed/workflow-dispatcher.js";
export type { WorkflowRegistrar } from "./typed/workflow-dispatcher.js";
export { workflowClient, WorkflowResultUnavailableError } from "./typed/workflow-client.js";
export type { WorkflowHost, WorkflowSubmitOptions, WorkflowRunEnd, WorkflowClient } from "./typed/workflow-client.js";

// Webhooks
export {
  InvalidWebhookRequestError,
  WebhookAddressRefusedError,
  WebhookDeliveryError,
  WebhookRejectedError,
  WebhookVerificationError,
} from "./webhooks/webhook-errors.js";
export type { WebhookVerificationFailure } from "./webhooks/webhook-errors.js";
export {
  WEBHOOK_URL_KEY,
  WEBHOOK_METHOD_KEY,
  WEBHOOK_TIMEOUT_KEY,
  WEBHOOK_HTTP_HEADER_PREFIX,
  DEFAULT_WEBHOOK_TIMEOUT_MS,
  MAX_WEBHOOK_TIMEOUT_MS,
  encodeWebhookHeaders,
  decodeWebhookJob,
  webhookEnqueueRequest,
  enqueueWebhook,
} from "./webhooks/webhook-request.js";
export type {
  WebhookRequest,
  DecodedWebhookRequest,
  WebhookEnqueueOptions,
  WebhookEnqueueRequest,
  WebhookEnqueuer,
} from "./webhooks/webhook-request.js";
export {
  WEBHOOK_ID_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  DEFAULT_WEBHOOK_TOLERANCE_MS,
  parseWebhookSecret,
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
} from "./webhooks/webhook-signature.js";
export type { WebhookSecret, WebhookHeaders, VerifyWebhookOptions, VerifiedWebhook } from "./webhooks/webhook-signature.js";
export type { AddressPolicyOptions, HostResolver, ResolvedAddress } from "./webhooks/address-policy.js";
export { DEFAULT_MAX_RETRY_AFTER_MS } from "./webhooks/delivery-verdict.js";
export { CLOUD_METADATA_ADDRESSES, isCloudMetadataAddress } from "./webhooks/metadata-addresses.js";
export {
  WebhookTerminalHook,
  CALLBACK_URL_HEADER,
  RUN_ID_HTTP_HEADER,
  RUN_STATUS_HTTP_HEADER,
  runFailureNotice,
} from "./webhooks/webhook-terminal-hook.js";
export type { RunFailureNotice, WebhookTerminalHookOptions } from "./webhooks/webhook-terminal-hook.js";
export { WebhookWorker, runWebhookWorker } from "./webhooks/webhook-worker.js";
export type { WebhookWorkerOptions, RunWebhookWorkerOptions } from "./webhooks/webhook-worker.js";

// Clients in other processes (an inbox in the store, served by the owner)
export { TaqubaClient, DEFAULT_CLIENT_TIMEOUT_MS, DEFAULT_CLIENT_POLL_MS, MIN_CLIENT_POLL_MS } from "./client/taquba-client.js";
export type { TaqubaClientOptions } from "./client/taquba-client.js";
export { ClientGroup, ClientJobGroup } from "./client/client-group.js";
export type { ClientGroupMember, ClientGroupSubmitOutcome, ClientMemberSubmission } from "./client/client-group.js";
export { serveClients, ClientInbox, DEFAULT_LIST_INTERVAL_MS, DEFAULT_APPLIED_RETENTION_MS } from "./client/inbox-server.js";
export type { ServeClientsOptions, InboxStats } from "./client/inbox-server.js";
export { GroupRecreatedError, TimeoutError } from "./client/client-errors.js";
export { RequestRefusedError, MalformedRequestError } from "./client/request-codec.js";

// Owner election (a lease in the store) and shards
export { runOwnerElection, OwnerElection, DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_INTERVAL_MS, MIN_RENEW_INTERVAL_MS } from "./cluster/owner-election.js";
export type { OwnerElectionOptions, OwnerElectionState, OwnerTerm, OwnedWork } from "./cluster/owner-election.js";
export { createShards, runShardWorkers, ShardWorkers } from "./cluster/shard-workers.js";
export type { ShardTerm, ShardWorkersOptions } from "./cluster/shard-workers.js";
export { routeShardSchedules } from "./cluster/shard-schedules.js";
export type { ShardPlace, ShardSchedules, ShardSchedulesOptions } from "./cluster/shard-schedules.js";
export { MAX_SHARDS, shardOfRun, shardOfSignal } from "./client/shard-route.js";
export type { ShardLayout } from "./client/shard-route.js";
export type { ShardPlacement } from "./queue/shard-layout.js";
export { readOwners } from "./cluster/owners-status.js";
export type { OwnerStatus, ReadOwnersOptions } from "./cluster/owners-status.js";
