/**
 * @module In-process "run X terminated" announcements, for waiters.
 *
 * Fired only after the terminating commit is durable. Workers' own
 * terminations are also visible through the queue's completion
 * notification of the step job; this covers the paths that complete no
 * step job (reconciliation of a dead step) and lets waiters wake at once.
 */
export class RunEvents {
  /** Per run id, its one waiter (most runs' wait) or a set of them: a run with one waiter makes no set. */
  readonly #waiters = new Map<string, RunWait | Set<RunWait>>();
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
    for (const ws of all) wakeAll(ws);
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
    wakeAll(ws);
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
    const held = this.#waiters.get(runId);
    if (held === undefined) this.#waiters.set(runId, w);
    else if (held instanceof RunWait) this.#waiters.set(runId, new Set([held, w]));
    else held.add(w);
    return w;
  }

  /** @internal Drops `w` from the waiters of `runId` (`RunWait.dispose`). */
  drop(runId: string, w: RunWait): void {
    const held = this.#waiters.get(runId);
    if (held === w) this.#waiters.delete(runId);
    else if (held instanceof Set && held.delete(w) && held.size === 0) this.#waiters.delete(runId);
  }
}

function wakeAll(waiters: RunWait | Set<RunWait>): void {
  if (waiters instanceof RunWait) waiters.wake();
  else for (const w of waiters) w.wake();
}

/** The resolve of the promise made last (`RunWait`'s constructor): an executor with no closure, so a wait makes none. */
let madeResolve: () => void = () => undefined;
function keepResolve(resolve: () => void): void {
  madeResolve = resolve;
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
  readonly #events: RunEvents;
  readonly #runId: string;
  /** @internal Its index among a wait poll's rounds (`WaitPoll`), -1 while it holds none. */
  pollSlot = -1;

  constructor(events: RunEvents, runId: string) {
    this.promise = new Promise<void>(keepResolve);
    this.wake = madeResolve;
    this.#events = events;
    this.#runId = runId;
  }

  /** Drops the registration (the promise stays as it is). A method: a caller that hands it on binds it. */
  dispose(): void {
    this.#events.drop(this.#runId, this);
  }
}

/**
 * The wakers of a held key's waiters in arrival order, `next` the first not
 * yet woken: a hand-off moves an index instead of shifting the array, which
 * cost time in the number of waiters and made many waiters on one key
 * quadratic.
 */
interface Waiters {
  readonly wakers: ((() => void) | undefined)[];
  next: number;
}

/** Woken waiters are cut from the front once they are this many and at least half the array. */
const COMPACT_AFTER = 1024;

/** Marks a key held with nobody waiting: a free key's holder makes no queue and no promise. Never pushed to. */
const HELD: Waiters = Object.freeze({ wakers: Object.freeze([]) as unknown as (() => void)[], next: 0 });

/** A per-key async mutex: callers of one key run one at a time, in arrival order. */
export class KeyedLock {
  /** Per held key, its waiters (`HELD` while none waits). */
  readonly #held = new Map<string, Waiters>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const waiting = this.#held.get(key);
    // A key nobody holds (most submits'): `fn` starts in this call, with no promise made or awaited before it.
    if (waiting === undefined) this.#held.set(key, HELD);
    else await this.#turn(key, waiting);
    try {
      return await fn();
    } finally {
      this.#release(key);
    }
  }

  /** Resolves when the holders before this caller have released `key`, which then passes to it still held. */
  #turn(key: string, waiting: Waiters): Promise<void> {
    let queue = waiting;
    if (queue === HELD) this.#held.set(key, (queue = { wakers: [], next: 0 }));
    return new Promise<void>((wake) => queue.wakers.push(wake));
  }

  #release(key: string): void {
    const queue = this.#held.get(key);
    if (queue === undefined) return;
    const { wakers } = queue;
    if (queue.next === wakers.length) {
      this.#held.delete(key);
      return;
    }
    const wake = wakers[queue.next]!;
    wakers[queue.next++] = undefined;
    if (queue.next >= COMPACT_AFTER && queue.next * 2 >= wakers.length) {
      wakers.splice(0, queue.next);
      queue.next = 0;
    }
    // Handed to the next waiter without being freed: a caller arriving meanwhile queues behind it.
    wake();
  }
}
