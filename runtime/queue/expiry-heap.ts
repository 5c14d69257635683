/**
 * @module `ExpiryHeap`: items in the order of their expiry, for a reaper
 * that reads the earliest ones, with removal by neglect.
 *
 * A node records the expiry its item had when pushed; it is current while
 * the item is live (the owner's predicate) and still has that expiry. The
 * owner calls `stale()` whenever it ends a current node (removes the item or
 * pushes it again at a later expiry). Stale nodes at the top are dropped
 * then and there: items mostly end in about the order they expire (leases
 * of one duration, settled in the order taken), so most of them leave while
 * their items are still young, rather than hundreds held until a rebuild
 * (which outlived the collector's young generation and cost more to check
 * than to drop one at a time). Those below a live node are dropped all at
 * once when they outnumber the current ones, so the heap holds at most
 * about twice the live items.
 */

interface HeapNode<T> {
  readonly at: number;
  readonly item: T;
}

/** Fewer nodes than this are never rebuilt: stale ones then cost less than the rebuild. */
const MIN_REBUILD = 1024;

export class ExpiryHeap<T extends { readonly expiresAt: number }> {
  #nodes: HeapNode<T>[] = [];
  /** Nodes known to be stale and not yet dropped. */
  #stale = 0;

  /** @param live whether an item is still held by the owner */
  constructor(private readonly live: (item: T) => boolean) {}

  /** Nodes held, stale ones included (for tests). */
  get nodeCount(): number {
    return this.#nodes.length;
  }

  /** Adds `item`, which expires at `at` (its `expiresAt`). */
  push(at: number, item: T): void {
    this.#insert({ at, item });
  }

  /** Notes that one current node went stale, and drops the stale nodes at the top. */
  stale(): void {
    this.#stale++;
    this.#top();
    if (this.#nodes.length >= MIN_REBUILD && this.#stale * 2 > this.#nodes.length) this.#rebuild();
  }

  /** The live item expiring first, if any. */
  min(): T | undefined {
    return this.#top()?.item;
  }

  /** Live items expiring at or before `now`, earliest first, at most `limit`; they stay in the heap. */
  upTo(now: number, limit: number): T[] {
    const out: T[] = [];
    const taken: HeapNode<T>[] = [];
    while (out.length < limit) {
      const n = this.#top();
      if (n === undefined || n.at > now) break;
      this.#popTop();
      taken.push(n);
      out.push(n.item);
    }
    for (const n of taken) this.#insert(n);
    return out;
  }

  clear(): void {
    this.#nodes = [];
    this.#stale = 0;
  }

  #current(n: HeapNode<T>): boolean {
    return n.item.expiresAt === n.at && this.live(n.item);
  }

  /** The top node once the stale ones above it are dropped. */
  #top(): HeapNode<T> | undefined {
    for (;;) {
      // By the length: an empty array's [0] is whatever a prototype holds there.
      if (this.#nodes.length === 0) return undefined;
      const n = this.#nodes[0]!;
      if (this.#current(n)) return n;
      this.#popTop();
      if (this.#stale > 0) this.#stale--;
    }
  }

  #rebuild(): void {
    const kept = this.#nodes.filter((n) => this.#current(n));
    kept.sort((a, b) => a.at - b.at);
    // A sorted array is a heap.
    this.#nodes = kept;
    this.#stale = 0;
  }

  #insert(n: HeapNode<T>): void {
    const a = this.#nodes;
    let i = a.length;
    a.push(n);
    // Most pushes expire no earlier than their parent (leases taken in order with one duration): the loop ends at once.
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
