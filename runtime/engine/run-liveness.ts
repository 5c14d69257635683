/**
 * @module Which entries of an immutable key run are still live, and how to
 * skip the dead ones fast.
 *
 * Entries only go from live to dead (a run is never written again), so per
 * direction a union-find over blocks, with path compression, finds the
 * nearest block that still has a live entry in amortized near-constant time:
 * a cursor never walks a block whose entries are all dead more than once
 * over the run's life. This is what keeps draining a queue linear: every
 * claim scans the pending index from its start, past everything claimed
 * before it.
 */

/** Dead bits, per-block live counts and the skip structures of one run. */
export class RunLiveness {
  /** One bit per entry, set when the entry died. */
  readonly #dead: Uint8Array;
  /** Live entries per block. */
  readonly #blockLive: Uint8Array;
  /** Forward skip: `find(b)` is the first block at or after b with a live entry; index `blocks` is the end sentinel. */
  readonly #next: Int32Array;
  /** Backward skip, shifted by one: `#prev[b + 1]` leads to the last live block at or before b; index 0 is the sentinel (-1). */
  readonly #prev: Int32Array;
  #live: number;

  /** Every entry live: `count` entries in blocks of `blockEntries` (at most 255). */
  constructor(count: number, blockEntries: number);
  constructor(from: RunLiveness);
  constructor(a: number | RunLiveness, blockEntries = 0) {
    if (a instanceof RunLiveness) {
      this.#dead = a.#dead.slice();
      this.#blockLive = a.#blockLive.slice();
      this.#next = a.#next.slice();
      this.#prev = a.#prev.slice();
      this.#live = a.#live;
      return;
    }
    const count = a;
    const blocks = Math.ceil(count / blockEntries);
    this.#dead = new Uint8Array(Math.ceil(count / 8));
    this.#blockLive = new Uint8Array(blocks);
    for (let b = 0; b < blocks; b++) this.#blockLive[b] = Math.min(blockEntries, count - b * blockEntries);
    this.#next = new Int32Array(blocks + 1);
    this.#prev = new Int32Array(blocks + 1);
    for (let b = 0; b <= blocks; b++) {
      this.#next[b] = b;
      this.#prev[b] = b;
    }
    this.#live = count;
  }

  /** Entries still live. */
  get live(): number {
    return this.#live;
  }

  /** Whether entry `i` died. */
  isDead(i: number): boolean {
    return (this.#dead[i >>> 3]! & (1 << (i & 7))) !== 0;
  }

  /** Marks entry `i` (of block `block`) dead; false when it already was. */
  kill(i: number, block: number): boolean {
    const bit = 1 << (i & 7);
    const at = i >>> 3;
    if ((this.#dead[at]! & bit) !== 0) return false;
    this.#dead[at]! |= bit;
    this.#live--;
    if (--this.#blockLive[block]! === 0) {
      this.#next[block] = block + 1;
      this.#prev[block + 1] = block;
    }
    return true;
  }

  /** Whether block `b` has a live entry. */
  blockHasLive(b: number): boolean {
    return this.#blockLive[b]! > 0;
  }

  /** The first block at or after `b` with a live entry, or the block count when none. */
  nextLive(b: number): number {
    return find(this.#next, b);
  }

  /** The last block at or before `b` with a live entry, or -1 when none. */
  prevLive(b: number): number {
    return find(this.#prev, b + 1) - 1;
  }

  /** A copy that later kills on this one do not change (for a snapshot). */
  clone(): RunLiveness {
    return new RunLiveness(this);
  }
}

/** Union-find root of `b` in `parent`, compressing the path it walked. */
function find(parent: Int32Array, b: number): number {
  let root = b;
  while (parent[root] !== root) root = parent[root]!;
  while (parent[b] !== root) {
    const up = parent[b]!;
    parent[b] = root;
    b = up;
  }
  return root;
}
