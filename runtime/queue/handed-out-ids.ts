/**
 * @module The ids a queue handed out for jobs named later (`nextJobId`),
 * kept until their insert takes them (`CallerIdBound.mayHoldEarlierDraw`).
 *
 * A sorted array between two indexes, not a set: a chained step draws its
 * next job's id and inserts it in the same commit, so a set held one or two
 * ids and grew or shrank its table on nearly every add and delete (about
 * 120 B of the heap a step). Ids arrive ascending (draws grow), so an add is
 * a store at the end and a take a binary search; the oldest and newest ids
 * are taken without moving others. The array never shrinks and keeps its
 * slots between uses; a slot out of use holds `""`, so no id stays held.
 */
export class HandedOutIds {
  readonly #ids: string[] = [];
  /** The ids held are `#ids[#from]` up to `#ids[#to - 1]`, ascending, no two equal. */
  #from = 0;
  #to = 0;

  /** `limit`: the most ids held; past it the oldest is dropped (its insert is then looked up). */
  constructor(readonly limit: number) {}

  get size(): number {
    return this.#to - this.#from;
  }

  /** Holds `id` (held already: nothing changes). */
  add(id: string): void {
    if (this.size >= this.limit) this.#ids[this.#from++] = "";
    const ids = this.#ids;
    const to = this.#to;
    if (to === this.#from || ids[to - 1]! < id) {
      this.#place(to, id);
      return;
    }
    // Out of order (an id drawn before the last one held): room made at the end (which may move the ids
    // held to the array's start), then placed where a search finds it.
    this.#place(to, "");
    const end = this.#to - 1;
    const at = this.#search(id, end);
    if (at < end && ids[at] === id) {
      this.#to = end;
      return;
    }
    for (let i = end; i > at; i--) ids[i] = ids[i - 1]!;
    ids[at] = id;
  }

  /** Stops holding `id`; whether it was held. */
  take(id: string): boolean {
    const from = this.#from;
    const to = this.#to;
    if (from === to) return false;
    const at = this.#search(id, to);
    const ids = this.#ids;
    if (at === to || ids[at] !== id) return false;
    // The shorter side moves over the gap.
    if (at - from < to - 1 - at) {
      for (let i = at; i > from; i--) ids[i] = ids[i - 1]!;
      ids[from] = "";
      this.#from = from + 1;
    } else {
      for (let i = at; i < to - 1; i++) ids[i] = ids[i + 1]!;
      ids[to - 1] = "";
      this.#to = to - 1;
    }
    if (this.#from === this.#to) this.#from = this.#to = 0;
    return true;
  }

  /** The first index from `#from` up to `end` whose id is at or above `id` (`end` when none is). */
  #search(id: string, end: number): number {
    const ids = this.#ids;
    let lo = this.#from;
    let hi = end;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid]! < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Stores `id` at `to`, the end: in a slot kept from earlier use, after moving the ids held to the array's start, or in a new one. */
  #place(to: number, id: string): void {
    const ids = this.#ids;
    if (to === ids.length && this.#from > 0) {
      const from = this.#from;
      for (let i = from; i < to; i++) {
        ids[i - from] = ids[i]!;
        ids[i] = "";
      }
      to -= from;
      this.#from = 0;
    }
    if (to === ids.length) ids.push(id);
    else ids[to] = id;
    this.#to = to + 1;
  }
}
