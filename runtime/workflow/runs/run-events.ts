/**
 * @module In-process "run X terminated" announcements, for waiters.
 *
 * Fired only after the terminating commit is durable. Workers' own
 * terminations are also visible through the queue's completion
 * notification of the step job; this covers the paths that complete no
 * step job (reconciliation of a dead step) and lets waiters wake at once.
 */
export class RunEvents {
  readonly #waiters = new Map<string, Set<RunWait>>();
  #closed: Error | undefined;
  /** Step workers running in this process, per step queue name (for the no-worker warning of waits). */
  readonly #workers = new Map<string, number>();

  /**
   * The error every wait settles with once the queue closed or its engine
   * failed; undefined while it is open. Waiters check it after each wake.
   */
  get closedError(): Error | undefined {
    return this.#closed;
  }

  /** Wakes every waiter for good: later `next()` calls resolve at once, and waiters see `closedError`. */
  close(error: Error): void {
    if (this.#closed !== undefined) return;
    this.#closed = error;
    const all = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const ws of all) for (const w of ws) w.wake();
  }

  /** Counts a step worker on `queueName` for as long as `run` lasts. */
  async withWorker<T>(queueName: string, run: () => Promise<T>): Promise<T> {
    this.#workers.set(queueName, (this.#workers.get(queueName) ?? 0) + 1);
    try {
      return await run();
    } finally {
      const n = (this.#workers.get(queueName) ?? 1) - 1;
      if (n === 0) this.#workers.delete(queueName);
      else this.#workers.set(queueName, n);
    }
  }

  /** Whether a step worker on `queueName` runs in this process. */
  hasWorker(queueName: string): boolean {
    return this.#workers.has(queueName);
  }

  /** Wakes every waiter of `runId`. */
  terminated(runId: string): void {
    const ws = this.#waiters.get(runId);
    if (ws === undefined) return;
    this.#waiters.delete(runId);
    for (const w of ws) w.wake();
  }

  /**
   * A wait resolved at the next termination of `runId`, or when its holder
   * calls `wake` (a timer of its own, say), and which `dispose` drops.
   */
  next(runId: string): RunWait {
    const w = new RunWait(this, runId);
    if (this.#closed !== undefined) {
      w.wake();
      return w;
    }
    let set = this.#waiters.get(runId);
    if (set === undefined) {
      set = new Set();
      this.#waiters.set(runId, set);
    }
    set.add(w);
    return w;
  }

  /** @internal Drops `w` from the waiters of `runId` (`RunWait.dispose`). */
  drop(runId: string, w: RunWait): void {
    const s = this.#waiters.get(runId);
    if (s === undefined || !s.delete(w)) return;
    if (s.size === 0) this.#waiters.delete(runId);
  }
}

/**
 * One waiter of a run's termination. Its own object with the promise's
 * resolve as `wake`, so a waiter that also waits for a timer hands the timer
 * `wake` and awaits one promise, instead of racing a second one.
 */
export class RunWait {
  readonly promise: Promise<void>;
  /** Resolves `promise`; any later call does nothing. */
  readonly wake: () => void;
  /** Drops the registration (the promise stays as it is). A function of its own: callers hand it on detached. */
  readonly dispose: () => void;

  constructor(events: RunEvents, runId: string) {
    let wake!: () => void;
    this.promise = new Promise<void>((resolve) => (wake = resolve));
    this.wake = wake;
    this.dispose = () => events.drop(runId, this);
  }
}

/** A per-key async mutex: callers of one key run one at a time, in arrival order. */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key);
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    // A key nobody holds (most submits'): `fn` starts in this call, with no promise chained or awaited before it.
    const tail = prev === undefined ? mine : prev.then(() => mine);
    this.#tails.set(key, tail);
    if (prev !== undefined) await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
