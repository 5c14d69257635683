/**
 * @module How a runner's worker lives in the background: the shutdown
 * trigger it accepts, the handle `spawn` returns, and the periodic loops
 * (retention sweeps) that run beside it on the runner's clock. Shared by
 * `WorkflowRuntime`, `JobRunner` and run-group retention so the three stop
 * the same way.
 */
import type { TimedClock } from "../clock.js";

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
