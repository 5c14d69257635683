/**
 * @module How a runner's worker lives in the background: the shutdown
 * trigger it accepts, the handle `spawn` returns, and the periodic loops
 * (retention sweeps) that run beside it on the runner's clock. Shared by
 * `WorkflowRuntime`, `JobRunner` and run-group retention so the three stop
 * the same way.
 */
import { MAX_TIMEOUT_MS, type TimedClock } from "../clock.js";
import { ValidationError } from "../errors.js";
import { callerField, describeValue, isOptionObject, optionFields, refuseUnknownFields } from "../option-values.js";

/** Handle of a spawned worker. */
export interface RunnerHandle {
  /** Stops claiming, lets in-flight steps finish, resolves when the worker stopped. */
  shutdown(): Promise<void>;
  /** Resolves when the worker stops (rejects if it failed). */
  readonly done: Promise<void>;
}

/** A shutdown trigger: a promise that resolves, or an abort signal. */
export type Shutdown = Promise<void> | AbortSignal;

/** @internal A controller aborted when `shutdown` fires (resolves, rejects or aborts); never, without one. */
export function stopOn(shutdown: Shutdown | undefined): AbortController {
  const stop = new AbortController();
  if (shutdown instanceof AbortSignal) {
    if (shutdown.aborted) stop.abort();
    else shutdown.addEventListener("abort", () => stop.abort(), { once: true });
  } else if (shutdown !== undefined) {
    shutdown.then(
      () => stop.abort(),
      () => stop.abort(),
    );
  }
  return stop;
}

/**
 * @internal Starts `run` in the background, stopped by `shutdown` or by the
 * handle. A failure of `run` surfaces through `done` and `shutdown()`, never
 * as an unhandled rejection of a handle nobody awaits.
 */
export function spawnWorker(run: (signal: AbortSignal) => Promise<void>, shutdown: Shutdown | undefined): RunnerHandle {
  const stop = stopOn(shutdown);
  const done = run(stop.signal);
  done.catch(() => undefined);
  return {
    done,
    shutdown: async () => {
      stop.abort();
      await done;
    },
  };
}

/**
 * @internal Runs `task` now and then every `intervalMs` on `clock` until
 * `signal` aborts or the queue closes. A failed pass goes to `onError` and is
 * retried at the next interval: a sweep that fails once (a store hiccup)
 * must not stop retention for the life of the worker.
 */
export async function repeatEvery(
  every: { readonly clock: TimedClock; readonly intervalMs: number; readonly queue: { readonly closed: boolean } },
  signal: AbortSignal,
  task: () => Promise<unknown>,
  onError: (e: unknown) => void,
): Promise<void> {
  const { clock, intervalMs, queue } = every;
  while (!signal.aborted && !queue.closed) {
    try {
      await task();
    } catch (e) {
      onError(e);
    }
    try {
      await clock.waitUntil(clock.now() + intervalMs, signal);
    } catch {
      return;
    }
  }
}

/** How long `close()` lets in-flight steps finish before it closes the queue anyway. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/** Options of `runtime.close()` and `runner.close()`. */
export interface CloseOptions {
  /**
   * How long in-flight steps may take to finish, in ms (default 10,000).
   * When it elapses the queue closes anyway: the unfinished steps' claims
   * are recovered, and the steps run again, at the next open.
   */
  readonly timeoutMs?: number;
}

/**
 * @internal The workers a runner started, so that `close()` can stop them
 * all and wait for them, bounded by a timeout. Once closing, no new worker
 * starts.
 */
export class WorkerSet {
  readonly #closing = new AbortController();
  readonly #running = new Set<Promise<unknown>>();

  /** Whether `stopAll` was called. */
  get closing(): boolean {
    return this.#closing.signal.aborted;
  }

  /** Runs `run` with a signal aborted by `shutdown` or by `stopAll`, tracked until it settles. */
  track<T>(shutdown: Shutdown | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const stop = stopOn(shutdown);
    const onClose = () => stop.abort();
    this.#closing.signal.addEventListener("abort", onClose, { once: true });
    const p = run(stop.signal);
    const settled = p.then(
      () => undefined,
      () => undefined,
    );
    this.#running.add(settled);
    void settled.then(() => {
      this.#running.delete(settled);
      this.#closing.signal.removeEventListener("abort", onClose);
    });
    return p;
  }

  /** Stops every tracked worker and waits for them, at most `timeoutMs`; true when all stopped in time. */
  async stopAll(timeoutMs: number): Promise<boolean> {
    this.#closing.abort();
    if (this.#running.size === 0) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([Promise.all([...this.#running]).then(() => true as const), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

const CLOSE_FIELDS = optionFields<CloseOptions>({ timeoutMs: true });

/** @internal Validates `CloseOptions.timeoutMs`; refuses a field that is no option. */
export function closeTimeout(opts: CloseOptions | undefined): number {
  if (isOptionObject(opts)) refuseUnknownFields(opts, CLOSE_FIELDS, "close.", "close's options");
  // A timeout set on Object.prototype is none (see `isBaseField`).
  const ms = (isOptionObject(opts) ? callerField(opts, "timeoutMs", "close.timeoutMs") : undefined) ?? DEFAULT_CLOSE_TIMEOUT_MS;
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0 || ms > MAX_TIMEOUT_MS) {
    throw new ValidationError(`close takes a timeoutMs between 0 and ${MAX_TIMEOUT_MS}, got ${describeValue(ms)}`);
  }
  return ms;
}
