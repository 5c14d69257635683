/**
 * @module Which freshly generated job ids a job may already hold. A
 * generated id is a ULID after every id the queue generated before, so
 * only a caller's own `jobId` shaped like a ULID can equal one. The bound
 * is the greatest such id a job may hold: the greatest one held when the
 * queue opened, raised by each caller id an enqueue brings. A generated id
 * above it needs no lookup; one at or below it does (see `freshJobId`).
 */
import type { Engine } from "../engine/engine.js";
import { jobKey } from "./keys.js";

/** A ULID as the queue generates them: 26 Crockford digits, the first 0-7 (48 bits of time). */
const ULID_SHAPED = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/** Keys looked at from the top at open before the bound settles for the last one seen (a bound too high only costs lookups). */
const OPEN_SCAN_LIMIT = 64;

export class CallerIdBound {
  #bound: string;

  private constructor(bound: string) {
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
      if (ULID_SHAPED.test(id) || ++seen >= OPEN_SCAN_LIMIT) {
        bound = id;
        break;
      }
    }
    return new CallerIdBound(bound);
  }

  /** Raises the bound to a caller's id about to be enqueued, before its commit. */
  note(id: string): void {
    if (id > this.#bound && id.length === 26 && ULID_SHAPED.test(id)) this.#bound = id;
  }

  /** Whether a job may hold the generated id `id`. */
  mayHold(id: string): boolean {
    return id <= this.#bound;
  }
}
