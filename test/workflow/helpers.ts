/**
 * @module Fixtures of the workflow tests: a queue over a memory store with
 * a mock clock and a runtime over it (`openEnv`), bounded waits for state
 * reached by background work, and a store whose WAL writes can be held back
 * to separate "applied in memory" from "durable".
 */
import {
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  WorkflowRuntime,
  type ObjectStore,
  type OpenOptions,
  StepOutcome,
  type RunnerHandle,
  type StepRunner,
  type RunOutcome,
  type TerminalHook,
  type WorkflowRuntimeBuilder,
} from "taquba";
import { afterEach } from "vitest";
import { until as untilReal } from "../support/until.js";
import { INLINE_OUTCOME_MAX_BYTES } from "../../runtime/workflow/runs/inline-outcome.js";
import { encodeInlineOutcome } from "../../runtime/workflow/records/records.js";

export const enc = (s: string) => new TextEncoder().encode(s);
export const dec = (b: Uint8Array | null | undefined) => (b == null ? String(b) : new TextDecoder().decode(b));

/**
 * `text` padded with spaces past what a terminal record keeps inline, so a
 * run that ends with it writes a run result record; `dec(...).trimEnd()`
 * gives `text` back.
 */
export const overInline = (text: string) => enc(text.padEnd(INLINE_OUTCOME_MAX_BYTES + 1));

/**
 * Run headers whose outcome's inline encoding is exactly `bytes` long: a
 * header whose value, of `unit` characters, is sized to land there (null
 * when no count of `unit` does).
 */
export function headersEncodingTo(bytes: number, unit: string): Record<string, string> | null {
  for (let n = 0; n < bytes; n++) {
    const h = { tenant: "acme", note: unit.repeat(n) };
    const size = encodeInlineOutcome({ headers: h }).byteLength;
    if (size === bytes) return h;
    if (size > bytes) return null;
  }
  return null;
}

/** Headers of `unit` encoding to the inline bound or just under (`at`) and just over it (`over`). */
export function headersAtAndOverInline(unit: string): { at: Record<string, string>; over: Record<string, string> } {
  // Some counts of a multi-byte unit skip a size: take the nearest the unit reaches on each side.
  let at: Record<string, string> | null = null;
  let over: Record<string, string> | null = null;
  for (let b = INLINE_OUTCOME_MAX_BYTES; at === null; b--) at = headersEncodingTo(b, unit);
  for (let b = INLINE_OUTCOME_MAX_BYTES + 1; over === null; b++) over = headersEncodingTo(b, unit);
  return { at, over };
}

/** Lets queued microtasks and immediates run. */
export async function settle(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Waits (in real time, bounded) until `cond` holds; for states reached by background work. */
export function until(cond: () => boolean | Promise<boolean>, what = "condition", timeoutMs = 5000): Promise<void> {
  return untilReal(what, cond, timeoutMs);
}

/**
 * Resolves once a started worker's run index backfill has written its mark
 * (one commit on a fresh store): tests that count commits start after it.
 */
export async function runIndexBackfilled(queue: Queue, stepQueue = "workflow-steps"): Promise<void> {
  await until(async () => (await queue.kvGet(`workflow/run-index-backfilled/${stepQueue}`)) !== null, "the run index backfill's mark");
  // The mark is readable once committed, but the engine counts a commit's batch when its WAL object is sealed (a turn later):
  // wait for that too, so a count of commits taken now does not include the mark's.
  await queue.flush();
}

export interface Env {
  store: ObjectStore;
  clock: MockClock;
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle | undefined;
  /** What the runtime logged (settlement failures after a simulated crash, ...). */
  logged: unknown[];
  stop(): Promise<void>;
}

export interface EnvOptions {
  store?: ObjectStore;
  clock?: MockClock;
  hook?: TerminalHook;
  queueOptions?: OpenOptions;
  configure?: (b: WorkflowRuntimeBuilder) => WorkflowRuntimeBuilder;
  /** Start the worker (default true). */
  start?: boolean;
  /** What the runtime is given as its queue, made from the queue opened (default: that queue). */
  wrapQueue?: (queue: Queue) => Queue;
}

/** A queue over a memory store with a mock clock, a runtime over it and (by default) a running worker. */
export async function openEnv(runner: StepRunner, opts: EnvOptions = {}): Promise<Env> {
  const store = opts.store ?? new MemoryStore();
  const clock = opts.clock ?? new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "wf", {
    flushIntervalMs: 1,
    ...opts.queueOptions,
    clock,
    queueConfigs: { "workflow-steps": { backoff: { baseMs: 1000, maxMs: 60_000 }, ...(opts.queueOptions?.queueConfigs?.["workflow-steps"] ?? {}) } },
  });
  const logged: unknown[] = [];
  let b = WorkflowRuntime.builder(opts.wrapQueue?.(queue) ?? queue, store, runner, opts.hook ?? NoopTerminalHook).logger({ error: (obj) => logged.push(obj) });
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

/**
 * Apps (a queue and the worker over it) that a test file opens: `track`
 * registers one, `stop` shuts its worker down and closes its queue (a clean
 * stop, or a restart's first half), and whatever a test leaves open is
 * stopped after it. Call at the top level of a test file.
 */
export function useOpenApps<A extends { readonly queue: Queue; readonly worker: RunnerHandle }>(): { track(app: A): A; stop(app: A): Promise<void> } {
  const open: A[] = [];
  const stop = async (app: A): Promise<void> => {
    open.splice(open.indexOf(app), 1);
    await app.worker.shutdown();
    await app.queue.close();
  };
  afterEach(async () => {
    for (const app of [...open]) await stop(app);
  });
  return {
    track(app) {
      open.push(app);
      return app;
    },
    stop,
  };
}

/** A runner from a function. */
export function runnerOf(fn: StepRunner["runStep"]): StepRunner {
  return { runStep: fn };
}

/**
 * Moves a mock clock from timer to timer, never past `limitMs`, until `cond`
 * holds: "this happens by `limitMs`" for work on clock timers. The clock
 * moves only once work already queued on the event loop has had a turn and
 * `cond` still fails: time passes while the process waits on a timer, never
 * between two parts of one operation (a jump there expired the lease of a
 * step whose commit was being released, whenever `cond` took fewer turns
 * than the step).
 */
export async function advanceUntil(clock: MockClock, limitMs: number, cond: () => Promise<boolean>, what = "condition"): Promise<void> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > 5000) throw new Error(`timed out waiting for ${what} by ${limitMs - clock.now()} ms from now`);
    await new Promise<void>((r) => setImmediate(r));
    if (await cond()) return;
    const next = clock.nextDeadline;
    if (next !== undefined && next <= limitMs && next > clock.now()) clock.set(next);
    else await new Promise<void>((r) => setTimeout(r, 2));
  }
}

/** A memory store whose WAL writes can be held back, so commits apply in memory but do not become durable. */
export interface HoldableStore extends ObjectStore {
  /** The memory store underneath, holding exactly what is durable. */
  readonly inner: MemoryStore;
  /** WAL puts held so far. */
  readonly held: number;
  /** Holds WAL writes from now on, after letting `after` more through. */
  hold(after?: number): void;
  release(): void;
}

export function holdableStore(): HoldableStore {
  const inner = new MemoryStore();
  let holding = false;
  let passes = 0;
  let held = 0;
  let waiters: Array<() => void> = [];
  return {
    inner,
    get held() {
      return held;
    },
    hold(after = 0) {
      holding = true;
      passes = after;
    },
    release() {
      holding = false;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    },
    get: (k) => inner.get(k),
    delete: (k) => inner.delete(k),
    list: (p, o) => inner.list(p, o),
    async put(k, b, o) {
      if (holding && k.includes("/wal/")) {
        if (passes > 0) passes--;
        else {
          held++;
          await new Promise<void>((r) => waiters.push(r));
        }
      }
      return inner.put(k, b, o);
    },
  };
}

/** A runner whose steps wait for `release`, then succeed with "late"; `calls` counts the steps it began. */
export function hangingRunner(release: Promise<void>): StepRunner & { calls: number } {
  const r = {
    calls: 0,
    async runStep() {
      r.calls++;
      await release;
      return StepOutcome.succeed(enc("late"));
    },
  };
  return r;
}

/** A terminal hook that records every notification it is given, in order. */
export function recordingHook(): TerminalHook & { seen: RunOutcome[] } {
  const seen: RunOutcome[] = [];
  return {
    seen,
    async onTermination(o) {
      seen.push(o);
    },
  };
}
