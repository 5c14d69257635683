/**
 * @module Exported functions called with hostile arguments in every
 * position (NaN, Infinity, 1e30, -0, a bigint, a symbol, a revoked Proxy,
 * an object whose every read throws, a 10 MB string, keys with lone
 * surrogates) answer or refuse with a typed error, at once: never a raw
 * TypeError or RangeError from deep inside, a hang (a string spread or
 * walked as an object of ten million entries), or a NaN answer. Add a
 * function here when it is exported, and a class to the constructor table.
 */
import { describe, expect, it } from "vitest";
import { hostileEscapes } from "../support/hostile-arguments.js";
import {
  AzureBlobStore,
  bindScheduleInput,
  childRunId,
  decodeWebhookJob,
  defineHeaders,
  defineJob,
  defineSchedule,
  defineSignal,
  defineWorkflow,
  encodeWebhookHeaders,
  enqueueWebhook,
  formatIssue,
  GcsStore,
  isCloudMetadataAddress,
  isRetryableAzureError,
  isRetryableGcsError,
  isRetryableS3Error,
  JobFailure,
  jobContext,
  LocalStore,
  MemoStore,
  MemoryStore,
  openStore,
  parseWebhookSecret,
  routeShardSchedules,
  runFailureNotice,
  S3Store,
  scheduleSpecOf,
  shardOfRun,
  shardOfSignal,
  signWebhook,
  StateKey,
  TaqubaClient,
  TaqubaError,
  upsertSchedules,
  validateJobId,
  validateObjectKey,
  validateQueueName,
  verifyWebhook,
  WebhookTerminalHook,
  WebhookWorker,
  webhookEnqueueRequest,
  withCounting,
  withFaults,
  withLatency,
  WorkflowDispatcher,
  WorkflowView,
  workflowClient,
} from "taquba";
import { checkContracts, compileKeyTemplate, encodeStepEnvelope, requireSignalSender, requireSubmitter, requireWorkflowHost } from "taquba/generated";
import { dailyEuSchedule } from "../codegen/fixtures/schedule-input/expected/archive/definitions.js";
import { searchReindexWorkflow } from "../codegen/fixtures/debounce/expected/digest/definitions.js";

const FUNCTIONS: Record<string, (...args: never[]) => unknown> = {
  childRunId,
  decodeWebhookJob,
  defineHeaders,
  defineJob,
  defineSchedule,
  defineSignal,
  defineWorkflow,
  encodeWebhookHeaders,
  enqueueWebhook,
  formatIssue,
  isCloudMetadataAddress,
  isRetryableAzureError,
  isRetryableGcsError,
  isRetryableS3Error,
  jobContext,
  openStore,
  parseWebhookSecret,
  runFailureNotice,
  scheduleSpecOf,
  shardOfRun,
  shardOfSignal,
  signWebhook,
  upsertSchedules,
  validateJobId,
  validateObjectKey,
  validateQueueName,
  verifyWebhook,
  withCounting,
  withFaults,
  withLatency,
  workflowClient,
  webhookEnqueueRequest,
  bindScheduleInput,
  compileKeyTemplate,
  encodeStepEnvelope,
  requireSignalSender,
  requireSubmitter,
  requireWorkflowHost,
  routeShardSchedules,
  checkContracts,
};

/**
 * The public constructors, each called through `new` (the arity is the
 * wrapper's), and where a class's constructor is internal the entry users
 * call instead (`TaqubaClient.open`, the dispatcher's builder).
 */
const CONSTRUCTORS: Record<string, (...args: never[]) => unknown> = {
  "new S3Store": (opts: never) => new S3Store(opts),
  "new GcsStore": (opts: never) => new GcsStore(opts),
  "new AzureBlobStore": (opts: never) => new AzureBlobStore(opts),
  "new LocalStore": (dir: never) => new LocalStore(dir),
  "new MemoStore": (store: never, prefix: never) => new MemoStore(store, prefix),
  "new WorkflowView": (source: never, memos: never, queueName: never) => new WorkflowView(source, memos, queueName),
  "new WebhookWorker": (opts: never) => new WebhookWorker(opts),
  "new WebhookTerminalHook": (opts: never) => new WebhookTerminalHook(opts),
  "new StateKey": (name: never) => new StateKey(name),
  "new JobFailure": (error: never, message: never) => new JobFailure(error, message),
  "TaqubaClient.open": (store: never, opts: never) => TaqubaClient.open(store, opts),
  "WorkflowDispatcher.builder().fallback": (runner: never) => WorkflowDispatcher.builder().fallback(runner).build(),
  "WorkflowDispatcher.builder().register": (definition: never, handler: never) => WorkflowDispatcher.builder().register(definition, handler),
};

const host = { submit: async () => ({}), status: async () => null, wait: async () => ({}), cancel: async () => false, signal: async () => ({}) };
const request = { url: "https://example.com/hook", body: "{}" };

/**
 * Valid arguments for the positions not under attack, where undefined would
 * be refused before the attacked position is read.
 */
const FILLS: Record<string, unknown[]> = {
  workflowClient: [searchReindexWorkflow, host, "digest"],
  enqueueWebhook: [{ enqueue: async () => ({ jobId: "j", newlyEnqueued: true }) }, "webhooks", request, {}],
  webhookEnqueueRequest: ["webhooks", request, {}],
  bindScheduleInput: [dailyEuSchedule, () => ({})],
  "TaqubaClient.open": [new MemoryStore(), { name: "app" }],
  "new MemoStore": [new MemoryStore(), "workflow-steps-memo"],
  "new WorkflowView": [
    { kvGet: async () => null, job: async () => null, kvScan: async () => ({ entries: [], nextCursor: null }) },
    new MemoStore(new MemoryStore(), "workflow-steps-memo"),
    "workflow-steps",
  ],
  "new JobFailure": [{}, "the job failed"],
  "WorkflowDispatcher.builder().register": [searchReindexWorkflow, { rebuild: async () => ({}) }],
  encodeStepEnvelope: ["digest.search.reindex", "rebuild", {}],
  requireSignalSender: [host, "digest"],
  requireSubmitter: [host, "digest"],
  requireWorkflowHost: [host, "digest"],
  checkContracts: [{ kvGet: async () => null, kvCompareAndPut: async () => true }, "workflow-steps", [{ name: "a.b.c", hash: "0123456789abcdef" }], false],
  routeShardSchedules: [
    { schedules: { routeBy: () => {} }, queueName: "workflow-steps", memoStore: { prefix: "workflow-steps-memo" } },
    new MemoryStore(),
    { name: "app", shard: 0, shards: 2 },
    {},
  ],
};

describe("exported functions given hostile arguments", () => {
  it.each(Object.entries({ ...FUNCTIONS, ...CONSTRUCTORS }))("%s refuses with a typed error or answers, at once", async (name, fn) => {
    const fill: unknown[] = FILLS[name] ?? [undefined, undefined, undefined, undefined];
    const escaped = await hostileEscapes(fn, fill, Math.max(1, fn.length));
    expect(escaped).toEqual([]);
  });

  it("a shard answer is a shard, never NaN", () => {
    expect(shardOfRun("run-1", 4)).toBeGreaterThanOrEqual(0);
    expect(() => shardOfRun("run-1", Number.NaN)).toThrow("a shard count must be a whole number from 1 to 256, got NaN");
    expect(() => shardOfSignal("paid:run-1", 0)).toThrow(TaqubaError);
    expect(() => shardOfRun(7 as unknown as string, 4)).toThrow("a run id to route must be a string, got 7");
    expect(shardOfSignal("paid:run-1", 4)).toBe(shardOfRun("run-1", 4));
  });
});
