/**
 * @module What an operator command works on: the store a URL names, a
 * read-only view of the owner's durable state, and a client whose writes
 * the owner applies. Each is opened on first use, so a command opens only
 * what it needs, and all are closed once the command ends.
 */
import { ValidationError } from "../../runtime/errors.js";
import { readExactOptions } from "../../runtime/option-values.js";
import { TaqubaClient } from "../../runtime/client/taquba-client.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { QueueReader } from "../../runtime/queue/reader.js";
import { openStore } from "../../runtime/store/open-store.js";
import type { ObjectStore } from "../../runtime/store/object-store.js";
import { MemoStore } from "../../runtime/workflow/memo/memo.js";
import { WorkflowView } from "../../runtime/workflow/runs/workflow-view.js";
import { readShardLayout, shardOfRun, shardStoreName } from "../../runtime/client/shard-route.js";

/** Where the operator tools point. */
export interface SessionOptions {
  /** The store URL (file:///dir, s3://bucket/prefix, ...). */
  readonly storeUrl: string;
  /** The name the owner gave `Queue.open`. */
  readonly name: string;
  /** The owner's step queue. */
  readonly stepQueue: string;
  /** The owner's memo prefix. Default: `{stepQueue}-memo`. */
  readonly memoPrefix?: string;
  /** How long a write waits for the owner's answer. Default: the client's. */
  readonly timeoutMs?: number;
  /** A store to use instead of opening the URL (the dashboard shares one across requests; tests count requests). */
  readonly store?: ObjectStore;
}

const SESSION_KEYS = ["storeUrl", "name", "stepQueue", "memoPrefix", "timeoutMs", "store"] as const satisfies readonly (keyof SessionOptions)[];

/** The store holds no queue store of this name: nothing was ever written, or the name is wrong. */
export class NoSuchStoreError extends Error {
  override readonly name = "NoSuchStoreError";
}

export class OperatorSession {
  readonly options: SessionOptions;
  #store: ObjectStore | undefined;
  #reader: Promise<QueueReader> | undefined;
  #view: WorkflowView | undefined;
  #client: Promise<TaqubaClient> | undefined;
  #shards: Promise<OperatorSession[] | undefined> | undefined;

  constructor(given: SessionOptions) {
    // Read once: the session consults its options at every command and shard, and a getter must not answer differently later.
    this.options = Object.freeze(readExactOptions(given, SESSION_KEYS, "SessionOptions") as SessionOptions);
    this.#store = this.options.store;
  }

  /** The name the owner gave `Queue.open`. */
  get name(): string {
    return this.options.name;
  }

  /** The owner's step queue. */
  get stepQueue(): string {
    return this.options.stepQueue;
  }

  /** The store the URL names (validated on first use). */
  store(): ObjectStore {
    this.#store ??= openStore(this.options.storeUrl);
    return this.#store;
  }

  /**
   * The read-only view of the owner's durable state, refreshed when
   * `fresh` (a long-lived session such as the dashboard's reads again).
   * Throws `NoSuchStoreError` when no owner ever wrote the store.
   */
  async reader(fresh = false): Promise<QueueReader> {
    if (this.#reader === undefined) {
      const opening = this.#openReader();
      this.#reader = opening;
      opening.catch(() => {
        if (this.#reader === opening) this.#reader = undefined;
      });
      return opening;
    }
    const r = await this.#reader;
    if (fresh) await r.refresh();
    return r;
  }

  async #openReader(): Promise<QueueReader> {
    const root = new PrefixedStore(this.store(), `${this.options.name}/`);
    for await (const _ of root.list("db/manifest/")) {
      return QueueReader.open(this.store(), this.options.name);
    }
    const shards = await this.shards();
    if (shards !== undefined) {
      throw new NoSuchStoreError(
        `${JSON.stringify(this.options.name)} is split into ${shards.length} shards: this command reads one queue store, so name a shard with --name ${this.options.name}/shards/<0..${shards.length - 1}>`,
      );
    }
    throw new NoSuchStoreError(
      `no queue store named ${JSON.stringify(this.options.name)} in ${this.options.storeUrl}: check --name (the name given to Queue.open) and the store URL`,
    );
  }

  /**
   * On a sharded store, one session per shard (sharing this one's store);
   * undefined when the store is not sharded. Read once per session.
   */
  shards(): Promise<OperatorSession[] | undefined> {
    this.#shards ??= readShardLayout(this.store(), this.options.name).then((layout) =>
      layout === undefined
        ? undefined
        : Array.from(
            { length: layout.shards },
            (_, i) => new OperatorSession({ ...this.options, name: shardStoreName(this.options.name, i), store: this.store() }),
          ),
    );
    return this.#shards;
  }

  /** Whether the store is split into shards. */
  async sharded(): Promise<boolean> {
    return (await this.shards()) !== undefined;
  }

  /** The session of the shard of run `runId` on a sharded store; this session otherwise. */
  async forRun(runId: string): Promise<OperatorSession> {
    const shards = await this.shards();
    return shards === undefined ? this : shards[shardOfRun(runId, shards.length)]!;
  }

  /** Status and outcome of runs, over the reader. */
  async view(fresh = false): Promise<WorkflowView> {
    const reader = await this.reader(fresh);
    this.#view ??= new WorkflowView(reader, this.memos(), this.options.stepQueue);
    return this.#view;
  }

  /** The owner's memo store (run outcomes live there). */
  memos(): MemoStore {
    return new MemoStore(this.store(), this.options.memoPrefix ?? `${this.options.stepQueue}-memo`);
  }

  /** A client whose commands (cancel, signal, retry) the running owner applies. */
  client(): Promise<TaqubaClient> {
    this.#client ??= TaqubaClient.open(this.store(), {
      name: this.options.name,
      queueName: this.options.stepQueue,
      ...(this.options.memoPrefix === undefined ? {} : { memoPrefix: this.options.memoPrefix }),
      ...(this.options.timeoutMs === undefined ? {} : { timeoutMs: this.options.timeoutMs }),
    });
    return this.#client;
  }

  async close(): Promise<void> {
    const reader = this.#reader;
    const client = this.#client;
    const shards = this.#shards;
    this.#reader = undefined;
    this.#client = undefined;
    this.#shards = undefined;
    await Promise.all([
      reader?.then((r) => r.close()).catch(() => undefined),
      client?.then((c) => c.close()).catch(() => undefined),
      shards?.then((list) => Promise.all((list ?? []).map((s) => s.close()))).catch(() => undefined),
    ]);
  }
}

/** Checks a positive integer option (milliseconds, limits). */
export function positiveInt(name: string, raw: string | undefined, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < 1 || n > max) {
    throw new ValidationError(`--${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}
