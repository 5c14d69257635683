/**
 * @module `ExpiryHeap`: items in the order of their expiry, for a reaper
 * that reads the earliest ones, with removal by neglect.
 *
 * A node records the expiry its item had when pushed; it is current while
 * the item is live (the owner's predicate) and still has that expiry. The
 * owner calls `stale()` whenever it ends a current node (removes the item or
 * pushes it again at a later expiry). Stale nodes at the front are dropped
 * then and there: items mostly end in about the order they expire (leases
 * of one duration, settled in the order taken), so most of them leave while
 * their items are still young. Those behind a live node are dropped all at
 * once when they outnumber the current ones, so at most about twice the
 * live items are held.
 *
 * Most items are pushed no earlier than the one pushed before them (leases
 * of one duration, taken as the clock moves on): those go to a run kept in
 * push order, which is expiry order, as two plain arrays. A push and a drop
 * there cost an append and a step of its head, with no node object and no
 * sift through a heap. Only an item that would expire before the run's last
 * one goes to the binary heap beside it; the earliest item is the earlier
 * of the two fronts.
 */

import { emptyDoubles, emptyObjects } from "../engine/array-kinds.js";

interface HeapNode<T> {
  readonly at: number;
  readonly item: T;
}

/** Fewer nodes than this are never rebuilt: stale ones then cost less than the rebuild. */
const MIN_REBUILD = 1024;

export class ExpiryHeap<T extends { readonly expiresAt: number }> {
  /** The run: expiries never falling, in push order, from `#runHead` on; the items beside them. */
  // Made as doubles: times in ms are past the small-integer range, and a list made by `[]` changes kind on its first push.
  #runAts: number[] = emptyDoubles();
  #runItems: (T | undefined)[] = emptyObjects();
  #runHead = 0;
  /** Items pushed earlier than the run's last expiry at the time, as a binary heap. */
  #nodes: HeapNode<T>[] = [];
  /** Nodes known to be stale and not yet dropped. */
  #stale = 0;

  /** @param live whether an item is still held by the owner */
  constructor(private readonly live: (item: T) => boolean) {}

  /** Nodes held, stale ones included (for tests). */
  get nodeCount(): number {
    return this.#runAts.length - this.#runHead + this.#nodes.length;
  }

  /** Of those, the nodes in the binary heap: items pushed out of expiry order (for tests). */
  get heapNodeCount(): number {
    return this.#nodes.length;
  }

  /** Adds `item`, which expires at `at` (its `expiresAt`). */
  push(at: number, item: T): void {
    const ats = this.#runAts;
    const n = ats.length;
    if (n === this.#runHead || at >= ats[n - 1]!) {
      ats.push(at);
      this.#runItems.push(item);
    } else this.#insert({ at, item });
  }

  /** Notes that one current node went stale, and drops the stale nodes at the front. */
  stale(): void {
    this.#stale++;
    this.#runFront();
    this.#heapTop();
    const held = this.nodeCount;
    if (held >= MIN_REBUILD && this.#stale * 2 > held) this.#rebuild();
  }

  /** The live item expiring first, if any. */
  min(): T | undefined {
    const r = this.#runFront();
    const h = this.#heapTop();
    if (r < 0) return h?.item;
    return h !== undefined && h.at < this.#runAts[r]! ? h.item : this.#runItems[r];
  }

  /** Live items expiring at or before `now`, earliest first, at most `limit`; they stay where they are. */
  upTo(now: number, limit: number): T[] {
    // The heap's due items, taken off its top in order and put back.
    const fromHeap: HeapNode<T>[] = [];
    while (fromHeap.length < limit) {
      const n = this.#heapTop();
      if (n === undefined || n.at > now) break;
      this.#popTop();
      fromHeap.push(n);
    }
    for (const n of fromHeap) this.#insert(n);
    // Merged with the run's due items, which are in order already.
    const out: T[] = [];
    const ats = this.#runAts;
    const items = this.#runItems;
    let h = 0;
    let i = this.#runFront();
    if (i < 0) i = ats.length;
    while (out.length < limit) {
      while (i < ats.length && !this.#current(ats[i]!, items[i]!)) i++;
      const runDue = i < ats.length && ats[i]! <= now;
      if (h < fromHeap.length && (!runDue || fromHeap[h]!.at < ats[i]!)) out.push(fromHeap[h++]!.item);
      else if (runDue) out.push(items[i++]!);
      else break;
    }
    return out;
  }

  clear(): void {
    this.#runAts = emptyDoubles();
    this.#runItems = emptyObjects();
    this.#runHead = 0;
    this.#nodes = [];
    this.#stale = 0;
  }

  #current(at: number, item: T): boolean {
    return item.expiresAt === at && this.live(item);
  }

  /** The index of the run's first current node once the stale ones before it are dropped; -1 when none is left. */
  #runFront(): number {
    const ats = this.#runAts;
    const items = this.#runItems;
    let i = this.#runHead;
    while (i < ats.length) {
      if (this.#current(ats[i]!, items[i]!)) break;
      // Let go at once: the item may be collected while it is young.
      items[i] = undefined;
      i++;
      if (this.#stale > 0) this.#stale--;
    }
    if (i === ats.length) {
      // Emptied: start again from the arrays' beginning, so they never grow past what is held.
      if (i > 0) {
        ats.length = 0;
        items.length = 0;
      }
      this.#runHead = 0;
      return -1;
    }
    // The dropped front is cut off once it is most of the arrays.
    if (i >= MIN_REBUILD && i * 2 > ats.length) {
      ats.splice(0, i);
      items.splice(0, i);
      i = 0;
    }
    this.#runHead = i;
    return i;
  }

  /** The heap's top node once the stale ones above it are dropped. */
  #heapTop(): HeapNode<T> | undefined {
    for (;;) {
      // By the length: an empty array's [0] is whatever a prototype holds there.
      if (this.#nodes.length === 0) return undefined;
      const n = this.#nodes[0]!;
      if (this.#current(n.at, n.item)) return n;
      this.#popTop();
      if (this.#stale > 0) this.#stale--;
    }
  }

  #rebuild(): void {
    const ats = emptyDoubles();
    const items = emptyObjects<T | undefined>();
    for (let i = this.#runHead; i < this.#runAts.length; i++) {
      const at = this.#runAts[i]!;
      const item = this.#runItems[i]!;
      if (!this.#current(at, item)) continue;
      ats.push(at);
      items.push(item);
    }
    this.#runAts = ats;
    this.#runItems = items;
    this.#runHead = 0;
    const kept = this.#nodes.filter((n) => this.#current(n.at, n.item));
    kept.sort((a, b) => a.at - b.at);
    // A sorted array is a heap.
    this.#nodes = kept;
    this.#stale = 0;
  }

  #insert(n: HeapNode<T>): void {
    const a = this.#nodes;
    let i = a.length;
    a.push(n);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = a[p]!;
      if (parent.at <= n.at) break;
      a[i] = parent;
      i = p;
    }
    a[i] = n;
  }

  #popTop(): void {
    const a = this.#nodes;
    const last = a.pop()!;
    const len = a.length;
    if (len === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= len) break;
      const r = l + 1;
      const c = r < len && a[r]!.at < a[l]!.at ? r : l;
      if (a[c]!.at >= last.at) break;
      a[i] = a[c]!;
      i = c;
    }
    a[i] = last;
  }
}
