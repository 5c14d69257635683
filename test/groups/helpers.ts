import {
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  WorkflowRuntime,
  type ObjectStore,
  type RunnerHandle,
  type StepRunner,
  type WorkflowRuntimeBuilder,
} from "taquba";

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array | null | undefined): string => (b == null ? String(b) : new TextDecoder().decode(b));

export interface GroupEnv {
  store: ObjectStore;
  clock: MockClock;
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle | undefined;
  logged: unknown[];
  /** Stops the worker and closes the queue (a clean shutdown). */
  stop(): Promise<void>;
}

/**
 * A queue over `store` with a mock clock and a runtime over it. The poll
 * interval is an hour and the clock never moves unless a test moves it, so
 * anything that finishes was woken by an in-process notification.
 */
export async function openGroupEnv(
  runner: StepRunner,
  opts: { store?: ObjectStore; clock?: MockClock; start?: boolean; configure?: (b: WorkflowRuntimeBuilder) => WorkflowRuntimeBuilder } = {},
): Promise<GroupEnv> {
  const store = opts.store ?? new MemoryStore();
  const clock = opts.clock ?? new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "grp", {
    flushIntervalMs: 1,
    clock,
    queueConfigs: { "workflow-steps": { backoff: { baseMs: 0, maxMs: 0 }, maxAttempts: 3 } },
  });
  const logged: unknown[] = [];
  let b = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook)
    .pollIntervalMs(3_600_000)
    .logger({ error: (obj) => logged.push(obj) });
  if (opts.configure) b = opts.configure(b);
  const runtime = b.build();
  const worker = opts.start === false ? undefined : runtime.spawn();
  return {
    store,
    clock,
    queue,
    runtime,
    worker,
    logged,
    async stop() {
      await worker?.shutdown();
      await queue.close();
    },
  };
}

/** Collects an async iterable. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Object keys under `prefix`. */
export async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}
