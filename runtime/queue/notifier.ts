/**
 * @module In-process wake-ups: "work became claimable on queue X" for
 * workers, and "job Y finished" for completion waiters. Nothing here is
 * durable; callers fire only after the write they announce is committed.
 */
import { holdProcess } from "./keep-alive.js";

/**
 * One `WorkNotifier.wait`: woken by a notify or its signal's abort (as the
 * signal's listener object), whichever is first. An object, not a closure
 * bound to a name: where names are kept at run time (esbuild's `keepNames`,
 * as tsx runs the sources) such a closure costs a definition of its name
 * each time it is made, once per idle wait of a worker.
 */
class WorkWaiter {
  readonly #waiters: Map<string, Set<WorkWaiter>>;
  readonly #queue: string;
  readonly #signal: AbortSignal | undefined;
  readonly #release: () => void;
  readonly #resolve: () => void;

  constructor(waiters: Map<string, Set<WorkWaiter>>, queue: string, signal: AbortSignal | undefined, release: () => void, resolve: () => void) {
    this.#waiters = waiters;
    this.#queue = queue;
    this.#signal = signal;
    this.#release = release;
    this.#resolve = resolve;
  }

  /** Ends the wait (a notify, or the signal's abort event): idempotent. */
  handleEvent(): void {
    this.#signal?.removeEventListener("abort", this);
    this.#waiters.get(this.#queue)?.delete(this);
    this.#release();
    this.#resolve();
  }
}

/** Per-queue epochs: a waiter that read epoch `e` before finding no work waits only if nothing was announced since. */
export class WorkNotifier {
  readonly #epochs = new Map<string, number>();
  readonly #waiters = new Map<string, Set<WorkWaiter>>();

  epoch(queue: string): number {
    return this.#epochs.get(queue) ?? 0;
  }

  /** Announces new claimable work on `queue` and wakes every waiter. */
  notify(queue: string): void {
    this.#epochs.set(queue, this.epoch(queue) + 1);
    const ws = this.#waiters.get(queue);
    if (ws === undefined) return;
    this.#waiters.delete(queue);
    for (const w of ws) w.handleEvent();
  }

  /**
   * Resolves on the next `notify(queue)` after epoch `seen`, at once when
   * one already happened, or when `signal` aborts (resolving, not rejecting).
   * While it waits, the process stays alive (a worker is running).
   */
  wait(queue: string, seen: number, signal?: AbortSignal): Promise<void> {
    if (this.epoch(queue) !== seen || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const release = holdProcess();
      let set = this.#waiters.get(queue);
      if (set === undefined) {
        set = new Set();
        this.#waiters.set(queue, set);
      }
      const waiter = new WorkWaiter(this.#waiters, queue, signal, release, resolve);
      set.add(waiter);
      signal?.addEventListener("abort", waiter, { once: true });
    });
  }

  /** Wakes every waiter of every queue (used at close). */
  wakeAll(): void {
    for (const q of [...this.#waiters.keys()]) this.notify(q);
  }
}

/** What a finished job ended as, for completion waiters. */
export type Finish = { kind: "done" | "dead" | "cancelled" } | { kind: "superseded"; by: string };

/** Waiters keyed by job id. */
export class CompletionNotifier {
  readonly #waiters = new Map<string, Set<(f: Finish) => void>>();

  finished(id: string, f: Finish): void {
    const ws = this.#waiters.get(id);
    if (ws === undefined) return;
    this.#waiters.delete(id);
    for (const w of ws) w(f);
  }

  /** Registers a waiter; returns the function that unregisters it. */
  on(id: string, fn: (f: Finish) => void): () => void {
    let set = this.#waiters.get(id);
    if (set === undefined) {
      set = new Set();
      this.#waiters.set(id, set);
    }
    set.add(fn);
    return () => {
      const s = this.#waiters.get(id);
      s?.delete(fn);
      if (s?.size === 0) this.#waiters.delete(id);
    };
  }
}
