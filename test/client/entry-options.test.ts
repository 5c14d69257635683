/**
 * @module The options objects of the public entry points (openers, servers,
 * workers, elections) are read once: a getter or Proxy is asked for each
 * field once (so a second read answering differently cannot slip past a
 * check), one that throws is a `ValidationError` naming the field rather
 * than the getter's own error, and a value of the wrong type is refused
 * naming the option. Every entry point takes the same three cases.
 */
import { describe, expect, it } from "vitest";
import {
  EngineReader,
  MemoryStore,
  NoopTerminalHook,
  Queue,
  QueueReader,
  TaqubaError,
  ValidationError,
  JobRunner,
  WebhookTerminalHook,
  WebhookWorker,
  WorkflowDispatcher,
  WorkflowRuntime,
  createShards,
  openStore,
  readOwners,
  routeShardSchedules,
  runOwnerElection,
  runShardWorkers,
  runWebhookWorker,
  runWorker,
  serveClients,
  type ObjectStore,
} from "taquba";
import { appRunner, STEP_QUEUE } from "./fixtures/app.js";

/** An entry point called with options `opts`; what it returned, or threw, as a promise (elections are stopped at once). */
type Entry = (opts: object) => Promise<unknown>;

interface Case {
  readonly name: string;
  /** The options the entry point accepts, with every field it reads set. */
  readonly good: () => Record<string, unknown>;
  /** The name its messages give the options object. */
  readonly prefix: string;
  /** A field and a wrong-typed value for it. */
  readonly wrong: readonly [field: string, value: unknown];
  /** What the refusal of the wrong value says, when not `{prefix}.{field}`. */
  readonly wrongNamed?: RegExp;
  /** What a refusal of the whole options object calls it, when not `prefix`. */
  readonly objectNamed?: string;
  readonly call: Entry;
}

async function stopIfStarted(v: unknown): Promise<void> {
  const s = v as { stop?: () => Promise<void> } | undefined;
  if (typeof s?.stop === "function") await s.stop();
}

async function outcome(call: Entry, opts: object): Promise<unknown> {
  try {
    const v = await call(opts);
    await stopIfStarted(v);
    return v;
  } catch (err) {
    return err;
  }
}

async function setup(): Promise<{ store: ObjectStore; queue: Queue; runtime: WorkflowRuntime; close(): Promise<void> }> {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "app");
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  await createShards(store, "sharded", 2);
  return {
    store,
    queue,
    runtime,
    close: async () => {
      await runtime.close();
      await queue.close();
    },
  };
}

const start = async () => ({ stop: async () => {} });
let jobRuns = 0;

describe("entry points read their options once and refuse by name", async () => {
  const env = await setup();
  const stopped = new AbortController();
  stopped.abort();
  const cases: Case[] = [
    {
      name: "Queue.open",
      prefix: "OpenOptions",
      objectNamed: "Queue.open options",
      good: () => ({
        clock: { now: () => Date.now() },
        defaultQueueConfig: { maxAttempts: 3, backoff: { baseMs: 10, maxMs: 100 } },
        queueConfigs: { jobs: { maxAttempts: 2 } },
        flushIntervalMs: 2,
        payloadOffloadBytes: 1024,
        logger: { error: () => {} },
        onDeadLettered: () => {},
        onClosed: () => {},
        recordCacheBytes: 1 << 20,
        engineOptions: { retry: { attempts: 2 } },
      }),
      wrong: ["onClosed", "log it"],
      call: async (opts) => {
        const q = await Queue.open(new MemoryStore(), "opened", opts as never);
        await q.close();
        return q;
      },
    },
    {
      name: "openStore",
      prefix: "OpenStoreOptions",
      good: () => ({ env: { AWS_REGION: "us-east-1" } }),
      wrong: ["env", "AWS_REGION=us-east-1"],
      call: async (opts) => openStore("memory://", opts as never),
    },
    {
      name: "serveClients",
      prefix: "ServeClientsOptions",
      good: () => ({ store: env.store, listIntervalMs: 1000, appliedRetentionMs: 60_000, maxConcurrentRequests: 4, logger: { error: () => {} } }),
      wrong: ["listIntervalMs", "1000"],
      call: async (opts) => serveClients(env.queue, env.runtime, opts as never),
    },
    {
      name: "runOwnerElection",
      prefix: "OwnerElectionOptions",
      good: () => ({
        start,
        leaseDurationMs: 15_000,
        renewIntervalMs: 5000,
        processId: "p1",
        clock: { now: () => Date.now() },
        logger: undefined,
        onChange: () => {},
      }),
      wrong: ["onChange", "owner"],
      call: async (opts) => runOwnerElection(env.store, "elected", opts as never),
    },
    {
      name: "runShardWorkers",
      prefix: "ShardWorkersOptions",
      good: () => ({ start, leaseDurationMs: 15_000, renewIntervalMs: 5000, processId: "p2", clock: { now: () => Date.now() }, onChange: () => {} }),
      wrong: ["processId", 7],
      call: (opts) => runShardWorkers(env.store, "sharded", opts as never),
    },
    {
      name: "routeShardSchedules",
      prefix: "ShardSchedulesOptions",
      good: () => ({ timeoutMs: 1000 }),
      wrong: ["timeoutMs", "1000"],
      call: async (opts) => {
        const r = routeShardSchedules(env.runtime, env.store, { name: "sharded", shard: 0, shards: 2 }, opts as never);
        await r.close();
        return r;
      },
    },
    {
      name: "readOwners",
      prefix: "ReadOwnersOptions",
      good: () => ({ queueName: STEP_QUEUE, now: () => Date.now() }),
      wrong: ["now", 5],
      call: (opts) => readOwners(env.store, "app", opts as never),
    },
    {
      name: "QueueReader.open",
      prefix: "QueueReader.open's options",
      good: () => ({ clock: { now: () => Date.now() } }),
      wrong: ["clock", 5],
      call: (opts) => QueueReader.open(env.store, "app", opts as never),
    },
    {
      name: "EngineReader.open",
      prefix: "EngineReaderOptions",
      good: () => ({ prefix: "app/db/", retry: { attempts: 2 } }),
      wrong: ["prefix", 5],
      wrongNamed: /invalid EngineReaderOptions; .*\n.*prefix must be a string/,
      call: async (opts) => {
        const r = await EngineReader.open(env.store, opts as never);
        await r.close();
        return r;
      },
    },
    {
      name: "WebhookWorker",
      prefix: "WebhookWorkerOptions",
      good: () => ({
        defaultTimeoutMs: 1000,
        maxRetryAfterMs: 1000,
        userAgent: "ua",
        allowLoopback: true,
        allowPrivate: false,
        allowedNetworks: [],
        resolve: undefined,
      }),
      wrong: ["userAgent", 5],
      call: async (opts) => new WebhookWorker(opts as never),
    },
    {
      name: "runWebhookWorker",
      prefix: "RunWebhookWorkerOptions",
      good: () => ({ concurrency: 1, signal: stopped.signal, userAgent: "ua" }),
      wrong: ["maxRetryAfterMs", "60000"],
      // A field of the worker's options, which these extend.
      wrongNamed: /WebhookWorkerOptions\.maxRetryAfterMs must be a number/,
      call: (opts) => runWebhookWorker(env.queue, "webhooks", opts as never),
    },
    {
      name: "runWorker",
      prefix: "RunWorkerOptions",
      good: () => ({ concurrency: 1, leaseMs: 1000, claimBatch: 1, signal: stopped.signal, onError: () => {} }),
      wrong: ["onError", "log it"],
      call: (opts) => runWorker(env.queue, "jobs", { process: async () => {} }, opts as never),
    },
    {
      name: "JobRunner.over",
      prefix: "JobRunnerOptions",
      good: () => ({ pollIntervalMs: 100, resultRetentionMs: 60_000, clock: { now: () => Date.now() }, logger: undefined }),
      wrong: ["clock", "now"],
      call: async (opts) => {
        // A runtime and dispatcher of its own each time: a dispatcher takes one job runner.
        const dispatcher = WorkflowDispatcher.builder().build();
        const runtime = WorkflowRuntime.builder(env.queue, env.store, dispatcher, NoopTerminalHook).queueName(`jobs-${++jobRuns}`).build();
        try {
          return JobRunner.over(env.queue, runtime, dispatcher, opts as never);
        } finally {
          await runtime.close();
        }
      },
    },
    {
      name: "WebhookTerminalHook",
      prefix: "WebhookTerminalHookOptions",
      good: () => ({ queueName: "callbacks", headers: { "x-app": "1" }, timeoutMs: 1000, maxAttempts: 3, exposeErrorText: false }),
      wrong: ["headers", "x-app: 1"],
      call: async (opts) => new WebhookTerminalHook(opts as never),
    },
  ];

  it.each(cases)("$name: works with good options, and asks a Proxy for each field once", async (c) => {
    const good = c.good();
    const reads = new Map<string, number>();
    const proxy = new Proxy(good, {
      get(target, k, receiver) {
        if (typeof k === "string") reads.set(k, (reads.get(k) ?? 0) + 1);
        return Reflect.get(target, k, receiver);
      },
    });
    const result = await outcome(c.call, proxy);
    expect(result).not.toBeInstanceOf(Error);
    const twice = [...reads].filter(([, n]) => n > 1).map(([k]) => k);
    expect(twice).toEqual([]);
  });

  it.each(cases)("$name: a getter that throws is a ValidationError naming the field", async (c) => {
    const [field] = c.wrong;
    const opts = Object.defineProperty(c.good(), field, {
      enumerable: true,
      get() {
        throw new Error("unreadable here");
      },
    });
    const err = await outcome(c.call, opts);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(`reading ${c.prefix}.${field} threw: unreadable here`);
  });

  it.each(cases)("$name: a wrong type is refused naming the option", async (c) => {
    const [field, value] = c.wrong;
    const err = await outcome(c.call, { ...c.good(), [field]: value });
    expect(err).toBeInstanceOf(ValidationError);
    if (c.wrongNamed === undefined) expect((err as Error).message).toContain(`${c.prefix}.${field}`);
    else expect((err as Error).message).toMatch(c.wrongNamed);
  });

  it.each(cases)("$name: options that are not an object are refused", async (c) => {
    const err = await outcome(c.call, "fast" as unknown as object);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(`${c.objectNamed ?? c.prefix} must be an object, got "fast" (a string)`);
  });

  it.each(cases)("$name: a revoked Proxy is refused as not an object", async (c) => {
    const { proxy, revoke } = Proxy.revocable(c.good(), {});
    revoke();
    const err = await outcome(c.call, proxy);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(`${c.objectNamed ?? c.prefix} must be an object, got a revoked Proxy`);
  });

  it.each(cases)("$name: a getter that throws what is not an error is a ValidationError naming the field", async (c) => {
    const [field] = c.wrong;
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const untextable = {
      toString() {
        throw new Error("no text");
      },
    };
    for (const thrown of [Object.create(null), Symbol("s"), revoked.proxy, untextable, undefined, 42]) {
      const opts = Object.defineProperty(c.good(), field, {
        enumerable: true,
        get() {
          throw thrown;
        },
      });
      const err = await outcome(c.call, opts);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain(`reading ${c.prefix}.${field} threw`);
    }
  });

  it.each(cases)("$name: a revoked Proxy as any field's value is refused with a typed error, not a TypeError", async (c) => {
    for (const field of Object.keys(c.good())) {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      const err = await outcome(c.call, { ...c.good(), [field]: proxy });
      expect({ field, err: err instanceof TaqubaError ? "typed" : err instanceof Error ? err.constructor.name : "none" }).toEqual({ field, err: "typed" });
    }
  });

  it('switches that open a guard take only booleans: the string "false" is truthy and is refused', () => {
    for (const k of ["allowLoopback", "allowPrivate"]) {
      expect(() => new WebhookWorker({ [k]: "false" })).toThrow(`WebhookWorkerOptions.${k} must be true or false, got "false" (a string)`);
    }
    expect(() => new WebhookTerminalHook({ queueName: "callbacks", exposeErrorText: "false" as unknown as boolean })).toThrow(
      'WebhookTerminalHookOptions.exposeErrorText must be true or false, got "false" (a string)',
    );
    expect(() => new WebhookTerminalHook({ queueName: "callbacks", maxAttempts: 0 })).toThrow(
      "WebhookTerminalHookOptions.maxAttempts must be a positive integer",
    );
    expect(() => new WebhookTerminalHook({ queueName: 7 as unknown as string })).toThrow("WebhookTerminalHookOptions.queueName must be the name of the queue");
    // A header getter that throws (here not even an error) is refused naming the option, not thrown through.
    const headers = Object.defineProperty({}, "x-key", {
      enumerable: true,
      get() {
        throw 1;
      },
    });
    expect(() => new WebhookTerminalHook({ queueName: "callbacks", headers })).toThrow("WebhookTerminalHookOptions.headers could not be read: 1");
  });

  it("a queue name that JSON cannot show (a bigint) is refused as invalid, not a TypeError", async () => {
    await expect(readOwners(new MemoryStore(), "app", { queueName: 10n as unknown as string })).rejects.toThrow("invalid queue name 10n (a bigint)");
  });

  it.each(cases)("$name: a nested option object whose fields throw when read is refused naming the option", async (c) => {
    const found: string[] = [];
    for (const [field, value] of Object.entries(c.good())) {
      if (value === null || typeof value !== "object") continue;
      // Every field read throws; a nested array's entries and length too.
      const hostile = new Proxy(value, {
        get() {
          throw new Error("nested read");
        },
      });
      const err = await outcome(c.call, { ...c.good(), [field]: hostile });
      // Named as `{prefix}.{field}`, as a field of options these extend (RunWorkerOptions.signal), or in a list of the options' problems (`retry.attempts`).
      const ok = err instanceof ValidationError && new RegExp(`(\\.${field}\\b|[ :]${field}\\.)`).test((err as Error).message);
      if (!ok) found.push(`${field}: ${err instanceof Error ? `${err.constructor.name}: ${err.message}` : "accepted"}`);
    }
    expect(found).toEqual([]);
  });

  /** Every entry point taking a logger, as the option path its refusals name and a call with that logger. */
  const loggerTakers: readonly (readonly [path: string, call: (logger: unknown) => Promise<unknown>])[] = [
    ["OpenOptions.logger", async (logger) => Queue.open(new MemoryStore(), "logged", { logger } as never)],
    ["logger", async (logger) => WorkflowRuntime.builder(env.queue, env.store, appRunner, NoopTerminalHook).logger(logger as never)],
    ...cases.filter((c) => "logger" in c.good()).map((c) => [`${c.prefix}.logger`, (logger: unknown) => c.call({ ...c.good(), logger })] as const),
  ];

  it("finds every entry point taking a logger", () => {
    expect(loggerTakers.map(([path]) => path)).toEqual(
      expect.arrayContaining(["OpenOptions.logger", "ServeClientsOptions.logger", "OwnerElectionOptions.logger", "JobRunnerOptions.logger"]),
    );
  });

  it.each(loggerTakers)("%s: a logger whose level is a throwing getter or a revoked Proxy is refused naming the level", async (path, call) => {
    const revokedFn = Proxy.revocable(() => {}, {});
    revokedFn.revoke();
    const revokedObj = Proxy.revocable({}, {});
    revokedObj.revoke();
    const throwing = Object.defineProperty({ error: () => {} }, "warn", {
      enumerable: true,
      get() {
        throw new Error("no warn here");
      },
    });
    const loggers: [unknown, string][] = [
      [throwing, `reading ${path}.warn threw: no warn here`],
      [{ error: revokedFn.proxy }, `${path}.error must be a function (obj, msg) => void, got a revoked Proxy`],
      [{ error: () => {}, info: revokedObj.proxy }, `${path}.info must be a function (obj, msg) => void, got a revoked Proxy`],
      [{ error: () => {}, debug: "verbose" }, `${path}.debug must be a function (obj, msg) => void, got "verbose" (a string)`],
      [revokedObj.proxy, `${path} must be an object with debug/info/warn/error(obj, msg) methods`],
    ];
    for (const [logger, message] of loggers) {
      const err = await outcome(call as Entry, logger as object);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain(message);
    }
  });

  it.each(loggerTakers)("%s: each level is read once, when the options are read", async (_path, call) => {
    const reads = new Map<string, number>();
    const logger = new Proxy(
      { error: () => {}, warn: () => {} },
      {
        get(target, k, receiver) {
          if (typeof k === "string") reads.set(k, (reads.get(k) ?? 0) + 1);
          return Reflect.get(target, k, receiver);
        },
      },
    );
    const result = await outcome(call as Entry, logger);
    expect(result).not.toBeInstanceOf(Error);
    await (result as { close?: () => Promise<void> } | undefined)?.close?.();
    expect(Object.fromEntries(reads)).toEqual({ debug: 1, info: 1, warn: 1, error: 1 });
  });

  it.each(cases)("$name: frozen and null-prototype options work", async (c) => {
    expect(await outcome(c.call, Object.freeze(c.good()))).not.toBeInstanceOf(Error);
    expect(await outcome(c.call, Object.assign(Object.create(null) as object, c.good()))).not.toBeInstanceOf(Error);
  });

  it("closes what it opened", async () => {
    await env.close();
  });
});
