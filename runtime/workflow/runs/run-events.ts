/**
 * @module In-process "run X terminated" announcements, for waiters.
 *
 * Fired only after the terminating commit is durable. Workers' own
 * terminations are also visible through the queue's completion
 * notification of the step job; this covers the paths that complete no
 * step job (reconciliation of a dead step) and lets waiters wake at once.
 */
export class RunEvents {
  readonly #waiters = new Map<string, Set<() => void>>();

  /** Wakes every waiter of `runId`. */
  terminated(runId: string): void {
    const ws = this.#waiters.get(runId);
    if (ws === undefined) return;
    this.#waiters.delete(runId);
    for (const w of ws) w();
  }

  /** A promise resolved at the next termination of `runId`, and a function that drops the registration. */
  next(runId: string): { promise: Promise<void>; dispose: () => void } {
    let fn!: () => void;
    const promise = new Promise<void>((resolve) => (fn = resolve));
    let set = this.#waiters.get(runId);
    if (set === undefined) {
      set = new Set();
      this.#waiters.set(runId, set);
    }
    set.add(fn);
    return {
      promise,
      dispose: () => {
        const s = this.#waiters.get(runId);
        s?.delete(fn);
        if (s?.size === 0) this.#waiters.delete(runId);
      },
    };
  }
}

/** A per-key async mutex: callers of one key run one at a time, in arrival order. */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.#tails.set(key, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
