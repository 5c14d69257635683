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
  EffectsHandle,
  encodeWebhookHeaders,
  Engine,
  EngineReader,
  enqueueWebhook,
  formatIssue,
  GcsStore,
  isCloudMetadataAddress,
  isRetryableAzureError,
  isRetryableGcsError,
  isRetryableS3Error,
  ClientGroup,
  ClientInbox,
  ClientJobGroup,
  JobFailure,
  JobRunner,
  jobContext,
  LocalStore,
  MemoStore,
  MemoryStore,
  openStore,
  OwnerElection,
  parseWebhookSecret,
  Queue,
  routeShardSchedules,
  runFailureNotice,
  S3Store,
  Schedules,
  scheduleSpecOf,
  ShardWorkers,
  shardOfRun,
  shardOfSignal,
  signWebhook,
  StateKey,
  TaqubaClient,
  TaqubaError,
  upsertSchedules,
  ValidationError,
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
  WorkflowRuntime,
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

/** A class whose constructor TypeScript hides (private or internal), as JavaScript reaches it. */
const reachable = (cls: unknown) => cls as new (...args: unknown[]) => object;

/**
 * The public constructors, each called through `new` (the arity is the
 * wrapper's), and where a class's constructor is internal the entry users
 * call instead (`TaqubaClient.open`, the dispatcher's builder) and the
 * constructor itself, which JavaScript can call (refused whatever it is given).
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
  "Engine.open": (store: never, opts: never) => Engine.open(store, opts),
  "EngineReader.open": (store: never, opts: never) => EngineReader.open(store, opts),
  "Queue.open": (store: never, name: never, opts: never) => Queue.open(store, name, opts),
  "JobRunner.over": (queue: never, runtime: never, dispatcher: never, opts: never) => JobRunner.over(queue, runtime, dispatcher, opts),
  "EffectsHandle.fromStaged": (staged: never) => EffectsHandle.fromStaged(staged),
  "new Engine": (a: never, b: never, c: never) => new (reachable(Engine))(a, b, c),
  "new EngineReader": (a: never, b: never) => new (reachable(EngineReader))(a, b),
  "new Queue": (a: never, b: never, c: never) => new (reachable(Queue))(a, b, c),
  "new WorkflowRuntime": (a: never, b: never) => new (reachable(WorkflowRuntime))(a, b),
  "new Schedules": (a: never) => new (reachable(Schedules))(a),
  "new JobRunner": (a: never, b: never, c: never, d: never) => new (reachable(JobRunner))(a, b, c, d),
  "new TaqubaClient": (a: never, b: never, c: never) => new (reachable(TaqubaClient))(a, b, c),
  "new ClientGroup": (a: never, b: never) => new (reachable(ClientGroup))(a, b),
  "new ClientJobGroup": (a: never, b: never, c: never) => new (reachable(ClientJobGroup))(a, b, c),
  "new ClientInbox": (a: never, b: never, c: never, d: never) => new (reachable(ClientInbox))(a, b, c, d),
  "new OwnerElection": (a: never, b: never, c: never, d: never) => new (reachable(OwnerElection))(a, b, c, d),
  "new ShardWorkers": (a: never, b: never, c: never, d: never) => new (reachable(ShardWorkers))(a, b, c, d),
};

/** The internal constructors, each with what a direct `new` says to use instead. */
const INTERNAL: [unknown, string][] = [
  [Engine, "new Engine(...) is internal to taquba: use Engine.open(store, options)"],
  [EngineReader, "new EngineReader(...) is internal to taquba: use EngineReader.open(store, options)"],
  [Queue, "new Queue(...) is internal to taquba: use Queue.open(store, name, options)"],
  [WorkflowRuntime, "new WorkflowRuntime(...) is internal to taquba: use WorkflowRuntime.builder(queue, store, runner, hook).build()"],
  [Schedules, "new Schedules(...) is internal to taquba: read runtime.schedules"],
  [JobRunner, "new JobRunner(...) is internal to taquba: use JobRunner.builder(queue, store) or JobRunner.over(queue, runtime, dispatcher)"],
  [TaqubaClient, "new TaqubaClient(...) is internal to taquba: use TaqubaClient.open(store, options)"],
  [ClientGroup, "new ClientGroup(...) is internal to taquba: use client.group(id)"],
  [ClientJobGroup, "new ClientJobGroup(...) is internal to taquba: use client.jobGroup(id, definition)"],
  [ClientInbox, "new ClientInbox(...) is internal to taquba: use serveClients(target, options)"],
  [OwnerElection, "new OwnerElection(...) is internal to taquba: use runOwnerElection(store, name, options)"],
  [ShardWorkers, "new ShardWorkers(...) is internal to taquba: use runShardWorkers(store, name, options)"],
];

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

  it.each(INTERNAL.map(([cls, message]) => [(cls as { name: string }).name, cls, message] as const))(
    "new %s from JavaScript (or of a subclass) is a ValidationError naming the entry point to use",
    (_name, cls, message) => {
      expect(() => new (reachable(cls))()).toThrow(new ValidationError(message));
      class Sub extends reachable(cls) {}
      expect(() => new Sub()).toThrow(ValidationError);
    },
  );

  it("the entry points refuse a store without the ObjectStore methods at once, not at its first use", async () => {
    const notAStore = { get: async () => null };
    await expect(Engine.open(notAStore as never)).rejects.toThrow(
      new ValidationError(
        "Engine.open's store must be an ObjectStore (with get, put, list and delete methods), got an object without a put method; pass an ObjectStore (a MemoryStore, a LocalStore, a store from openStore) or a wrapper whose methods call it",
      ),
    );
    expect(() => new MemoStore(notAStore as never, "workflow-steps-memo")).toThrow(
      new ValidationError(
        "new MemoStore's store must be an ObjectStore (with get, put, list and delete methods), got an object without a put method; pass an ObjectStore (a MemoryStore, a LocalStore, a store from openStore) or a wrapper whose methods call it",
      ),
    );
    expect(() => new MemoStore(new MemoryStore(), "memo/")).toThrow("new MemoStore's memoPrefix must be a non-empty prefix without a trailing '/'");
    expect(() => EffectsHandle.fromStaged({ puts: [["k", "v"]], deletes: [] } as never)).toThrow(
      `EffectsHandle.fromStaged's staged.puts[0] must be a [string key, Uint8Array value] pair, got ["k" (a string), "v" (a string)]`,
    );
    expect(() => JobRunner.over(new MemoryStore() as never, {} as never, {} as never)).toThrow(
      /^JobRunner.over was given arguments it cannot use:\n {2}- queue must be/,
    );
  });

  it("the entry points and wrappers refuse an optional store method set to something other than a function, at once", async () => {
    // A store written in JS with `getBorrowed: null` used to fail every reopen after retries, as if the store were unreachable.
    const plain = new MemoryStore();
    const withNull = {
      get: plain.get.bind(plain),
      put: plain.put.bind(plain),
      list: plain.list.bind(plain),
      delete: plain.delete.bind(plain),
      getBorrowed: null,
    };
    await expect(Engine.open(withNull as never)).rejects.toThrow(
      new ValidationError("Engine.open's store has getBorrowed set to null; an optional store method must be a function or left out (not null)"),
    );
    expect(() => withCounting({ ...withNull, getBorrowed: undefined, getRange: 5 } as never)).toThrow(
      new ValidationError("the store withCounting wraps has getRange set to 5; an optional store method must be a function or left out (not null)"),
    );
    const throwing = Object.defineProperty({ ...withNull, getBorrowed: undefined }, "getRangeInto", {
      get() {
        throw new Error("nope");
      },
    });
    await expect(Engine.open(throwing as never)).rejects.toThrow(/^Engine.open's store threw when its optional method getRangeInto was read/);
    // Left out, undefined or a function: all taken.
    const engine = await Engine.open({ ...withNull, getBorrowed: undefined } as never);
    await engine.close();
  });

  it("a shard answer is a shard, never NaN", () => {
    expect(shardOfRun("run-1", 4)).toBeGreaterThanOrEqual(0);
    expect(() => shardOfRun("run-1", Number.NaN)).toThrow("a shard count must be a whole number from 1 to 256, got NaN");
    expect(() => shardOfSignal("paid:run-1", 0)).toThrow(TaqubaError);
    expect(() => shardOfRun(7 as unknown as string, 4)).toThrow("a run id to route must be a string, got 7");
    expect(shardOfSignal("paid:run-1", 4)).toBe(shardOfRun("run-1", 4));
  });
});
