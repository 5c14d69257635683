/**
 * @module How long the group commit may hold a small WAL object open for
 * more commits against a slow store (wal-writer.ts, "When to seal").
 *
 * While many commits wait for objects in flight, the writer holds a small
 * open object until it holds `MIN_OBJECT_BATCHES` commits or those commits
 * drop below that, so that a slow store's objects do not shrink to one
 * release group each. Unbounded, that hold made the first commits of an
 * object wait for the landing of an object still in flight: about half a
 * round trip on top of their own put at 100 writers. Bounded here by a
 * share of the measured put latency (never below the flush window): a
 * commit waits for at most a fraction of a round trip before its object is
 * sealed and sent beside the others in flight (up to the in-flight bound),
 * so it is stored about one round trip plus that bound after it was made,
 * while an object still takes every commit made in that time and grows
 * with the commit rate.
 */

/**
 * Tuning, internal to the engine (mutable so tests and benches can pin it):
 * `putShare` of the estimated put latency is how long a held object may
 * gather, at most `maxHoldMs` (a put slowed by retries or a stall must not
 * stretch every later commit's wait).
 */
export const holdTuning = { putShare: 0.25, maxHoldMs: 50 };

/** Weight of the newest put in the latency estimate: a few puts move it, one outlier does not. */
const NEWEST_PUT_WEIGHT = 1 / 8;

/** The latency estimate of one WAL writer's puts and the hold bound it gives. */
export class GatherBound {
  readonly #flushIntervalMs: number;
  /** Moving average of the puts' times, ms; NaN before the first put lands. */
  #putMs = Number.NaN;

  constructor(flushIntervalMs: number) {
    this.#flushIntervalMs = flushIntervalMs;
  }

  /** Records a put that took `ms` from its start to its answer. */
  notePut(ms: number): void {
    if (!(ms >= 0)) return;
    // Past the latency whose share is the cap, a put adds nothing to the bound: counted at that, a stall fades in a few puts.
    const counted = Math.min(ms, holdTuning.maxHoldMs / holdTuning.putShare);
    this.#putMs = Number.isNaN(this.#putMs) ? counted : this.#putMs + (counted - this.#putMs) * NEWEST_PUT_WEIGHT;
  }

  /** The estimated put latency, ms (NaN before any put landed). */
  get putMs(): number {
    return this.#putMs;
  }

  /** How long an object opened now may be held for more commits: the flush window, or the put latency's share when longer. */
  holdMs(): number {
    const share = Number.isNaN(this.#putMs) ? 0 : Math.min(holdTuning.maxHoldMs, this.#putMs * holdTuning.putShare);
    return Math.max(this.#flushIntervalMs, share);
  }
}

/** What the hold decision looks at (see `holdsOpen`). */
export interface HoldState {
  /** Commits in the open object. */
  gathered: number;
  /** Commits in objects not yet stored, plus those stored and not yet released. */
  waiting: number;
  /** The time now, and the time after which the open object is no longer held (ms, one clock). */
  now: number;
  holdUntil: number;
}

/**
 * Whether a small open object keeps gathering: fewer than `minBatches`
 * commits in it, at least that many waiting whose release will bring more,
 * and its bound not reached. Each landing, release step and the bound's
 * timer look again; nothing polls.
 */
export function holdsOpen(s: HoldState, minBatches: number): boolean {
  return s.gathered < minBatches && s.waiting >= minBatches && s.now < s.holdUntil;
}
