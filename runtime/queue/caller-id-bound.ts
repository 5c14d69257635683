/**
 * @module Which freshly generated job ids a job may already hold. A
 * generated id is a ULID after every id the queue generated before, so
 * only a caller's own `jobId` shaped like a ULID can equal one, and only
 * one above the ids drawn so far can equal a later draw.
 *
 * Two marks keep the lookups few (see `freshJobId`). The bound is the
 * greatest such id a job may hold (the greatest held at open, raised by
 * each caller id an enqueue brings): a draw above it needs no lookup. The
 * next mark is the least such id at or above the last scan's draw that a
 * job may hold, read from the keys when a draw reaches it: a draw below it
 * needs no lookup either, so a caller holding one far-future id costs one
 * scan, not a lookup at every draw until the clock reaches that id.
 *
 * A noted id is also counted in flight until its enqueue's commit is built
 * (or never will be): no key holds it yet, but a draw must pass over it all
 * the same, or the caller's commit would find its own id taken.
 *
 * An id drawn for a job named later (`nextJobId`, a workflow's next step)
 * was held by no job when drawn; a caller's job can take it before the
 * insert only by an enqueue noted after the draw, at or below the draws.
 * The greatest such late id is kept: an earlier draw above it needs no
 * lookup at its insert either.
 *
 * That holds only for an id this queue drew: a `WorkflowQueue` may draw
 * from one queue and commit on another, whose marks say nothing of the
 * other's ids. So the ids `nextJobId` hands out are kept until their
 * insert (a bounded set, oldest dropped first): an id the committing queue
 * did not hand out, or whose note was dropped, is looked up.
 */
import type { Engine } from "../engine/engine.js";
import { jobKey } from "./keys.js";
import { HandedOutIds } from "./handed-out-ids.js";

/** A ULID as the queue generates them: 26 Crockford digits, the first 0-7 (48 bits of time). */
const ULID_SHAPED = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/** Keys looked at in one scan before it settles for the last one seen (a mark too low only costs another scan). */
const SCAN_LIMIT = 64;

/**
 * Caller ids noted above the draws and kept for the scans (a noted id's
 * commit may land after a scan that missed it). Past this many at once, not
 * yet committed, lookups go back to every draw up to the bound.
 */
const AHEAD_LIMIT = 64;

/**
 * Ids handed out by `nextJobId` kept at once for their insert. One a caller
 * never inserts as drawn (its own enqueue names it as a caller's id) stays
 * until dropped; a dropped one is only looked up.
 */
const HANDED_OUT_LIMIT = 8192;

/** Sorts after every job id (`~` follows every character an id may hold). */
const ABOVE_ALL = "~";

export class CallerIdBound {
  readonly #engine: Engine;
  #bound: string;
  /** No job holds a ULID-shaped id in [`#scannedFrom`, `#next`); draws only grow, so this holds for every later draw below `#next`. */
  #scannedFrom = "";
  #next = "";
  /** The greatest id asked about: a caller id at or below it is never drawn again. */
  #drawn = "";
  /** Ids `nextJobId` handed out and not yet inserted as drawn (see `mayHoldEarlierDraw`). */
  readonly #handedOut = new HandedOutIds(HANDED_OUT_LIMIT);
  /** The greatest ULID-shaped caller id noted at or below `#drawn` at the time: only such an id can take an id drawn before it was noted. */
  #late = "";
  /** Caller ids noted above `#drawn`, perhaps not committed yet: a scan of the keys could miss them. */
  readonly #ahead: string[] = [];
  /** Set when more than `AHEAD_LIMIT` such ids were in flight: `#next` is then not kept, and every draw up to the bound is looked up. */
  #overflowed = false;
  /**
   * Noted ids whose enqueues have not built their commits yet, with how
   * many enqueues name each (two callers may name one id; the second is
   * refused only once the first holds it). Holds only ids a draw can still
   * meet, of enqueues under way: each holds its payload meanwhile.
   */
  readonly #inFlight = new Map<string, number>();

  private constructor(engine: Engine, bound: string) {
    this.#engine = engine;
    this.#bound = bound;
  }

  /** The bound over the jobs `engine` holds: the greatest ULID-shaped job id, read from the keys alone. */
  static of(engine: Engine): CallerIdBound {
    const prefix = jobKey("");
    let bound = "";
    let seen = 0;
    // Every ULID-shaped id sorts in [j/0, j/8); ids of other shapes in it are passed over, up to the limit.
    for (const key of engine.keys({ start: jobKey("0"), end: jobKey("8"), reverse: true })) {
      const id = key.slice(prefix.length);
      if (ULID_SHAPED.test(id) || ++seen >= SCAN_LIMIT) {
        bound = id;
        break;
      }
    }
    return new CallerIdBound(engine, bound);
  }

  /**
   * Notes a caller's id about to be enqueued, before its commit. True when
   * a later draw could meet it: it is then in flight until `landed(id)`,
   * which the enqueue calls once its commit is built or will never be.
   */
  note(id: string): boolean {
    if (id.length !== 26) return false;
    if (id <= this.#drawn) {
      // No later draw meets it, but a draw already made and not yet inserted may (see `mayHoldEarlierDraw`).
      if (id > this.#late && ULID_SHAPED.test(id)) this.#late = id;
      return false;
    }
    if (!ULID_SHAPED.test(id)) return false;
    this.#inFlight.set(id, (this.#inFlight.get(id) ?? 0) + 1);
    if (id > this.#bound) this.#bound = id;
    if (this.#overflowed) return true;
    if (id >= this.#scannedFrom && id < this.#next) this.#next = id;
    if (this.#ahead.length >= AHEAD_LIMIT) this.#pruneAhead();
    if (this.#ahead.length >= AHEAD_LIMIT) this.#overflowed = true;
    else this.#ahead.push(id);
    return true;
  }

  /** Ends one enqueue's flight of `id`, noted by `note` (its commit is built, or it failed first). */
  landed(id: string): void {
    const left = (this.#inFlight.get(id) ?? 0) - 1;
    if (left > 0) this.#inFlight.set(id, left);
    else this.#inFlight.delete(id);
  }

  /**
   * Whether an enqueue not yet committed names `id`: a draw passes over it.
   * Asked only of ids `mayHold` allows (it does every id in flight).
   */
  inFlight(id: string): boolean {
    return this.#inFlight.has(id);
  }

  /** Whether a job may hold the generated id `id`; ids asked about must grow, as the queue draws them. */
  mayHold(id: string): boolean {
    this.#drawn = id;
    if (id > this.#bound) return false;
    if (this.#overflowed) return true;
    if (id >= this.#scannedFrom && id < this.#next) return false;
    this.#next = this.#leastHeldFrom(id);
    this.#scannedFrom = id;
    return this.#next === id;
  }

  /** Notes `id`, just drawn by `nextJobId` for a job named later, as this queue's (see `mayHoldEarlierDraw`). */
  handedOut(id: string): void {
    this.#handedOut.add(id);
  }

  /**
   * Whether a job may hold `id`, about to be inserted as an id this queue
   * drew. True (look it up) unless `nextJobId` handed it out (held by no
   * job, nor named by an enqueue in flight, at the draw) and no caller's
   * id noted since, at or below the draws, can equal it. An id this queue
   * did not hand out (drawn before a restart, or by another queue) is
   * looked up. Ends the id's note: a second insert of it is looked up too.
   */
  mayHoldEarlierDraw(id: string): boolean {
    return !this.#handedOut.take(id) || id <= this.#late;
  }

  /** The least ULID-shaped id at or above `from` that a job may hold: a committed key, or a noted id. */
  #leastHeldFrom(from: string): string {
    let least = ABOVE_ALL;
    let kept = 0;
    for (const id of this.#ahead) {
      if (id < from) continue;
      if (id < least) least = id;
      this.#ahead[kept++] = id;
    }
    this.#ahead.length = kept;
    const prefix = jobKey("");
    let seen = 0;
    for (const key of this.#engine.keys({ start: jobKey(from), end: jobKey(least < "8" ? least : "8") })) {
      const id = key.slice(prefix.length);
      if (ULID_SHAPED.test(id) || ++seen >= SCAN_LIMIT) return id;
    }
    return least;
  }

  /** Drops the noted ids the draws passed and those committed (a scan finds those in the keys). */
  #pruneAhead(): void {
    let kept = 0;
    for (const id of this.#ahead) if (id > this.#drawn && !this.#engine.has(jobKey(id))) this.#ahead[kept++] = id;
    this.#ahead.length = kept;
  }
}
