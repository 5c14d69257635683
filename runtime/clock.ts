/**
 * @module Time, injected.
 *
 * Every timestamp and every timed wait in the SDK goes through a `Clock`, so
 * a `MockClock` moves schedules, backoff, leases and retention in tests
 * without sleeping.
 */
import { ValidationError } from "./errors.js";
import { describeValue } from "./option-values.js";

export interface Clock {
  /** Milliseconds since the epoch; the SDK reads them whole (fractions dropped) and refuses NaN, infinite or negative readings with `ValidationError`. */
  now(): number;
  /**
   * Resolves once `now() >= at`, or at once when it already is. Rejects with
   * the signal's reason when `signal` aborts first. Timers are never busy
   * loops: a system clock sets one timeout, a mock clock waits for `advance`.
   * Optional: a clock without it is waited on with real timers against its
   * `now()` (see `timedClock`).
   */
  waitUntil?(at: number, signal?: AbortSignal): Promise<void>;
}

/** A clock that can wait: what the SDK uses inside, made from any `Clock` by `timedClock`. */
export interface TimedClock extends Clock {
  waitUntil(at: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error("aborted");
}

/** @internal setTimeout's longest delay (24.8 days): a longer one fires after 1 ms instead, so longer waits re-arm. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Waits with real timers until `now() >= at`, re-arming after each timeout
 * in case the clock moved slower than wall time (or went backwards).
 */
function waitWithTimers(now: () => number, at: number, signal?: AbortSignal, holdsProcess = true): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const arm = () => {
      const remaining = at - now();
      if (remaining <= 0) {
        signal?.removeEventListener("abort", onAbort);
        resolve();
        return;
      }
      timer = setTimeout(arm, Math.min(remaining, MAX_TIMEOUT_MS));
      if (!holdsProcess) timer.unref();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    arm();
  });
}

/** Where a clock's waits are real timers: the same wait, on a timer that does not keep the process alive. */
const waitInBackgroundKey = Symbol("taquba.waitInBackground");

interface BackgroundWaits {
  [waitInBackgroundKey]?: (at: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * @internal `clock.waitUntil(at, signal)` for the SDK's own background work
 * (queue maintenance): on the system clock, and on any clock waited on with
 * real timers, the timer does not keep the process alive, so a process whose
 * workers stopped can exit without closing its queue. A clock with its own
 * `waitUntil` (MockClock, an application's) is waited on as it is.
 */
export function waitInBackground(clock: TimedClock, at: number, signal?: AbortSignal): Promise<void> {
  const own = (clock as BackgroundWaits)[waitInBackgroundKey];
  return own !== undefined ? own(at, signal) : clock.waitUntil(at, signal);
}

/** A wait its caller may end early: `cancel` drops the timer and resolves `promise`. */
export interface CancellableWait {
  readonly promise: Promise<void>;
  cancel(): void;
}

/** Where a clock's waits are real timers: a wait ended by `cancel()`, with no `AbortController`. */
const cancellableWaitKey = Symbol("taquba.cancellableWait");

interface CancellableWaits {
  [cancellableWaitKey]?: (at: number) => CancellableWait;
}

/** `waitWithTimers` (holding the process) ended by a call instead of a signal. */
function cancellableTimerWait(now: () => number, at: number): CancellableWait {
  let timer: NodeJS.Timeout | undefined;
  let done!: () => void;
  const promise = new Promise<void>((resolve) => (done = resolve));
  const arm = () => {
    const remaining = at - now();
    if (remaining <= 0) done();
    else timer = setTimeout(arm, Math.min(remaining, MAX_TIMEOUT_MS));
  };
  arm();
  return {
    promise,
    cancel: () => {
      clearTimeout(timer);
      done();
    },
  };
}

/** A call its caller may drop before it is due: `cancel` drops the timer, and the call is not made. */
export interface CancellableCall {
  cancel(): void;
}

/** Where a clock's waits are real timers: a call at a time, with no promise and no `AbortController`. */
const cancellableCallKey = Symbol("taquba.cancellableCall");

interface CancellableCalls {
  [cancellableCallKey]?: (at: number, fn: () => void) => CancellableCall;
}

/** `cancellableTimerWait` calling `fn` instead of resolving a promise. */
function cancellableTimerCall(now: () => number, at: number, fn: () => void): CancellableCall {
  const timer = new TimerCall(now, at, fn);
  timer.arm();
  return timer;
}

/** One re-armed timer of `cancellableTimerCall`: its own object, handed to the timer, so a call costs no closure. */
class TimerCall implements CancellableCall {
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly now: () => number,
    private readonly at: number,
    private readonly fn: () => void,
  ) {}

  arm(): void {
    const remaining = this.at - this.now();
    if (remaining <= 0) {
      this.#timer = undefined;
      this.fn();
    } else this.#timer = setTimeout(armAgain, Math.min(remaining, MAX_TIMEOUT_MS), this);
  }

  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function armAgain(t: TimerCall): void {
  t.arm();
}

/**
 * @internal Calls `fn` once `clock.now() >= at` (at once when it already
 * is), unless `cancel()` comes first. On a clock waited on with real timers
 * it costs a timer and no promise; on any other clock it is `waitUntil`
 * with an `AbortController`. For a wake-up made and dropped often (every
 * round of `WorkflowRuntime.wait`), where a promise of its own would only
 * be raced against another.
 */
export function cancellableCall(clock: TimedClock, at: number, fn: () => void): CancellableCall {
  const own = (clock as CancellableCalls)[cancellableCallKey];
  if (own !== undefined) return own(at, fn);
  const ac = new AbortController();
  // Checked when the wait ends: a cancel after the clock passed `at` but before this reaction ran still drops the call.
  clock.waitUntil(at, ac.signal).then(
    () => {
      if (!ac.signal.aborted) fn();
    },
    () => undefined,
  );
  // A shared reason: a default one is a DOMException, with a stack, per call.
  return { cancel: () => ac.abort(WAIT_CANCELLED) };
}

const WAIT_CANCELLED = new Error("wait cancelled");

/**
 * @internal `clock.waitUntil(at)` that the caller ends early with `cancel()`
 * (which also resolves the promise). On a clock waited on with real timers
 * it costs a timer and a promise; on any other clock it is `waitUntil` with
 * an `AbortController`, whose rejection on `cancel` is swallowed. For a wait
 * made and dropped often (every round of `WorkflowRuntime.wait`).
 */
export function cancellableWait(clock: TimedClock, at: number): CancellableWait {
  const own = (clock as CancellableWaits)[cancellableWaitKey];
  if (own !== undefined) return own(at);
  const ac = new AbortController();
  return {
    promise: clock.waitUntil(at, ac.signal).catch(() => undefined),
    // A shared reason: a default one is a DOMException, with a stack, per wait.
    cancel: () => ac.abort(WAIT_CANCELLED),
  };
}

class SystemClockImpl implements TimedClock {
  now(): number {
    return Date.now();
  }

  waitUntil(at: number, signal?: AbortSignal): Promise<void> {
    return waitWithTimers(Date.now, at, signal);
  }

  [waitInBackgroundKey](at: number, signal?: AbortSignal): Promise<void> {
    return waitWithTimers(Date.now, at, signal, false);
  }

  [cancellableWaitKey](at: number): CancellableWait {
    return cancellableTimerWait(Date.now, at);
  }

  [cancellableCallKey](at: number, fn: () => void): CancellableCall {
    return cancellableTimerCall(Date.now, at, fn);
  }
}

/** Wall-clock time. */
export const SystemClock: TimedClock = new SystemClockImpl();

/**
 * The SDK's clocks and the mock clock as they are; any other clock wrapped
 * so its `now()` reads in whole milliseconds (times are stored as whole
 * numbers: a clock built on `performance.now()` would otherwise make ids and
 * records fail) and, without its own `waitUntil`, waits with real timers,
 * re-checking `now()` when each one fires. Every clock an application hands
 * to the SDK goes through this once.
 */
export function timedClock(clock: Clock): TimedClock {
  if (clock === SystemClock || clock instanceof MockClock) return clock as TimedClock;
  const now = () => wholeMs(clock.now());
  if (typeof clock.waitUntil === "function") {
    const wait = clock.waitUntil;
    return { now, waitUntil: (at, signal) => wait.call(clock, at, signal) };
  }
  const timed: TimedClock & BackgroundWaits & CancellableWaits & CancellableCalls = {
    now,
    waitUntil: (at, signal) => waitWithTimers(now, at, signal),
    [waitInBackgroundKey]: (at, signal) => waitWithTimers(now, at, signal, false),
    [cancellableWaitKey]: (at) => cancellableTimerWait(now, at),
    [cancellableCallKey]: (at, fn) => cancellableTimerCall(now, at, fn),
  };
  return timed;
}

/** A clock reading in whole milliseconds; throws `ValidationError` for one that is no time at all. */
function wholeMs(ms: number): number {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0 || ms > MAX_TIME_MS) {
    throw new ValidationError(`the clock's now() must return milliseconds since the epoch, got ${describeValue(ms)}; check the clock passed in the options`);
  }
  return Math.floor(ms);
}

/** Latest time a clock may read: the largest date JavaScript represents. */
const MAX_TIME_MS = 8.64e15;

/** Checks a time given to `MockClock`: whole milliseconds within the dates JavaScript represents (before the epoch too, to test skew). */
function checkMockTime(what: string, ms: number): number {
  if (!Number.isSafeInteger(ms) || Math.abs(ms) > MAX_TIME_MS) {
    throw new ValidationError(`${what} takes whole milliseconds from -${MAX_TIME_MS} to ${MAX_TIME_MS}, got ${describeValue(ms)}`);
  }
  return ms;
}

interface MockTimer {
  at: number;
  resolve(): void;
}

/**
 * A clock that moves only when told. `advance` and `set` wake every waiter
 * whose deadline has passed, in deadline order.
 */
export class MockClock implements TimedClock {
  #now: number;
  #timers = new Set<MockTimer>();

  constructor(startMs = 1_700_000_000_000) {
    this.#now = checkMockTime("new MockClock", startMs);
  }

  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` and wakes the timers now due. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new ValidationError(`MockClock.advance takes a non-negative number of milliseconds, got ${describeValue(ms)}`);
    this.set(checkMockTime("MockClock.advance", this.#now + checkMockTime("MockClock.advance", ms)));
  }

  /** Sets the time (it may go backwards, to test clock skew) and wakes the timers now due. */
  set(ms: number): void {
    this.#now = checkMockTime("MockClock.set", ms);
    const due = [...this.#timers].filter((t) => t.at <= ms).sort((a, b) => a.at - b.at);
    for (const t of due) {
      this.#timers.delete(t);
      t.resolve();
    }
  }

  /** How many waits are pending; tests use it to know a worker went idle. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** The earliest pending deadline, if any. */
  get nextDeadline(): number | undefined {
    let min: number | undefined;
    for (const t of this.#timers) if (min === undefined || t.at < min) min = t.at;
    return min;
  }

  waitUntil(at: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (at <= this.#now) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer: MockTimer = {
        at,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#timers.delete(timer);
        reject(abortReason(signal!));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#timers.add(timer);
    });
  }
}
