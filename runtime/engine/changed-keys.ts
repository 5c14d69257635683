/**
 * @module The keys changed since the last checkpoint cut, with their new
 * values: a hash map whose keys are UTF-8 bytes back to back in one buffer
 * outside the JavaScript heap, instead of a `Map` of key strings.
 *
 * A fill of 1M jobs keeps about 150,000 changed keys between checkpoints;
 * as a `Map` they cost about 50 B of hash table and a 50-70 B string each
 * on the heap (the string outlives the key's memtable entry once the
 * memtable freezes), and the collector lets the heap grow to several times
 * what is live. Here a key costs its bytes, a start offset, a hash and a
 * table slot in typed arrays, and one slot of a value array.
 *
 * Only what the engine needs: `set` (insert or replace), `size` (distinct
 * keys), iteration in insertion order (keys decoded again), and the entry
 * order a checkpoint writes (change-order.ts compares the bytes).
 *
 * A key the state did not hold when the map began (its first change found
 * no value: a put of a new key, a delete of an absent one) and that is
 * deleted again is no change at all: the runs the map's checkpoint is laid
 * over hold no entry of it, so a tombstone would only be written, merged
 * and carried for nothing. A queue's claimed job is such a key: its record
 * and claim entry are put at a claim and deleted at the ack, usually within
 * one checkpoint's interval. The map keeps such an entry (a later put makes
 * it a change again) but leaves it out of `changes`, and the checkpoint's
 * order (change-order.ts) skips it. It still counts in `size`, so a delta
 * overflows (sorted-map.ts) as before. A compaction's carry takes the
 * changes after its cut through `mergeLater`, which keeps its run exact over
 * both cuts.
 */
import { holeyObjects } from "./array-kinds.js";
import { hashStep } from "./key-hash.js";
import type { ArenaValue, PackedValue } from "./paged-value.js";
import type { BatchOp } from "./write-batch.js";

/** A changed key's new value (packed when the engine packs it, see `applyOps`); `null` marks a deleted key. */
export type ChangedValue = Uint8Array | ArenaValue | PackedValue | null;

/**
 * The most key bytes a map takes: its offsets are 32-bit. A map refuses a
 * key past it (a `RangeError`), but the engine never lets one reach that:
 * it stops recording changes before a batch would take a map past half of
 * it (`hasRoomFor`; the next checkpoint then rewrites the state, as when
 * more than half the state changed), so a compaction's carry merged with a
 * later map fits as well. An object only so that tests can lower it.
 */
export const changedKeysLimit = { bytes: 0xffff_ffff };

/**
 * A random start for a map's hash. From one fixed start, anyone choosing
 * keys (caller KV keys, dedup keys) can make thousands share one hash
 * cheaply (two blocks of a few characters that reach one state, chained:
 * 2^k keys for k birthday searches), and every insert would then walk past
 * all the keys before it: seconds of CPU inside a commit. Collisions found
 * from one start do not carry over to another (key-hash.ts says why the
 * step rotates), which the caller cannot see.
 */
function randomBasis(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]!;
}

/**
 * `h` with every bit stirred into the low ones (a bijection, so equal hashes
 * stay equal and only equal ones). The table takes a hash's low bits, and
 * the last bytes of a key reach the high bits of its hash more than the low
 * ones: keys that differ only at their end would crowd neighbouring slots.
 */
function mixed(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A retired map's arrays (see `ChangedKeys.retire`). */
interface KeyArrays {
  bytes: Buffer;
  starts: Uint32Array;
  hashes: Uint32Array;
  /** As long as `hashes`: 1 where the entry's key had no value when the map began. */
  absent: Uint8Array;
  table: Int32Array;
}

/**
 * The arrays of one retired map, for the next map to take instead of
 * allocating its own. A map lives for a checkpoint interval and the
 * checkpoint after it, so its arrays (outside the heap) die in the old
 * generation: a 1M-job fill made about 80 MB of them, dead until the next
 * mark-compact, and freed memory the allocator kept. The engine knows when a
 * map is done (its checkpoint paged out, or it was merged into a carry): it
 * retires the map here and makes the next one from these. At most one set is
 * kept, of at most `MAX_BYTES`.
 */
export class ChangedKeysSpares {
  static readonly MAX_BYTES = 64 * 1024 * 1024;
  #kept: KeyArrays | undefined;
  /** Maps made from kept arrays, in the whole process (for tests: the engine's spares are its own). */
  static taken = 0;

  /** Keeps `arrays` (dropping any kept before) unless they are larger than `MAX_BYTES`. */
  give(arrays: KeyArrays): void {
    const bytes = arrays.bytes.byteLength + arrays.starts.byteLength + arrays.hashes.byteLength + arrays.absent.byteLength + arrays.table.byteLength;
    this.#kept = bytes <= ChangedKeysSpares.MAX_BYTES ? arrays : undefined;
  }

  /** The kept arrays, if any (then no longer kept). */
  take(): KeyArrays | undefined {
    const kept = this.#kept;
    this.#kept = undefined;
    if (kept !== undefined) ChangedKeysSpares.taken++;
    return kept;
  }
}

/**
 * The error of a map used after `retire`: its arrays belong to another map
 * now, and reading them would give that map's keys. Each method checks the
 * flag in its own body, so the check stays one field load where a call
 * would cost the hot ones (measured with bench/changed-keys-hash.ts).
 */
function usedAfterRetire(): Error {
  return new Error("a changed-keys map was used after it was retired (its arrays went to a newer map)");
}

/** See the module documentation. Keys must be well-formed UTF-16 (the WAL refuses others before they reach here). */
export class ChangedKeys<V = ChangedValue> {
  #bytes: Buffer;
  #used = 0;
  /** Entry i's key is `#bytes[#starts[i], #starts[i + 1])`. */
  #starts: Uint32Array;
  #hashes: Uint32Array;
  /** 1 where entry i's key had no value in the state when the map began (see the module documentation). */
  #absent: Uint8Array;
  /** Entries whose key had no value when the map began and is deleted now: no change to write. */
  #noChange = 0;
  /** Entry i's value; `#count` entries (the array is made with room for the expected keys). */
  #values: V[];
  #count = 0;
  /** Open addressing, linear probing: entry index + 1, 0 for an empty slot; a power of two, at most half full. */
  #table: Int32Array;
  /** Left by `#find`: the key's hash; when it missed, also the empty slot and the byte length of the key it encoded. */
  #slot = 0;
  #hash = 0;
  #len = 0;
  readonly #basis: number;
  #longestProbe = 0;
  /** Set by `retire`: the arrays went to another map, so any further use is a bug (it throws). */
  #retired = false;

  /**
   * `hashBasis`: the hash's start, random unless a test pins it. `expect`:
   * the keys and key bytes to make room for at once (the engine passes the
   * last map's, a quarter more): a map grown by doubling leaves a dead copy
   * of its arrays at each step, and its value array (a plain array, on the
   * heap) dies in the old generation once it outlived a few collections.
   */
  constructor(hashBasis = randomBasis(), expect: { keys: number; keyBytes: number } = { keys: 0, keyBytes: 0 }, spares?: ChangedKeysSpares) {
    // Signed: every map's start then fits a small integer, where an unsigned one past 2^31 is a heap number in
    // half the maps, another field representation that deoptimizes the hashing code a map before had optimized.
    // The hash's bits are the same either way (its shifts read the start's 32 bits).
    this.#basis = hashBasis | 0;
    const keys = Math.min(Math.max(1024, Math.ceil(expect.keys * 1.25)), 1 << 22);
    const keyBytes = Math.min(Math.max(4096, Math.ceil(expect.keyBytes * 1.25)), changedKeysLimit.bytes);
    let slots = 2048;
    while (slots < 2 * keys) slots *= 2;
    // Of objects' kind from the start (see array-kinds): each memtable's map is a new instance, and code optimized
    // on the last map's values (`new Array` is small integers until its first store) would meet another class.
    this.#values = holeyObjects<V>(keys);
    // A retired map's arrays where they are large enough (a smaller one grows as it would from the sizes asked).
    const kept = spares?.take();
    this.#bytes = kept !== undefined && kept.bytes.length >= keyBytes ? kept.bytes : Buffer.allocUnsafe(keyBytes);
    if (kept !== undefined && kept.hashes.length >= keys) {
      this.#starts = kept.starts;
      this.#hashes = kept.hashes;
      this.#absent = kept.absent;
    } else {
      this.#starts = new Uint32Array(keys + 1);
      this.#hashes = new Uint32Array(keys);
      this.#absent = new Uint8Array(keys);
    }
    if (kept !== undefined && kept.table.length >= slots) this.#table = kept.table.fill(0);
    else this.#table = new Int32Array(slots);
  }

  /**
   * Gives this map's arrays to `spares` for the next map: the caller must
   * hold no other reference to this map, and any later use of it throws.
   */
  retire(spares: ChangedKeysSpares): void {
    if (this.#retired) throw usedAfterRetire();
    this.#retired = true;
    spares.give({ bytes: this.#bytes, starts: this.#starts, hashes: this.#hashes, absent: this.#absent, table: this.#table });
    const none = new Uint32Array(0);
    this.#bytes = Buffer.alloc(0);
    this.#starts = none;
    this.#hashes = none;
    this.#absent = new Uint8Array(0);
    this.#noChange = 0;
    this.#table = new Int32Array(0);
    this.#values = [];
    this.#count = 0;
    this.#used = 0;
  }

  /** The most table slots one lookup has looked at (for tests: keys that collide make it long). */
  get longestProbe(): number {
    return this.#longestProbe;
  }

  /** Distinct keys. */
  get size(): number {
    return this.#count;
  }

  /** Keys whose change a checkpoint writes: `size` less the keys that had no value when the map began and are deleted now. */
  get changes(): number {
    return this.#count - this.#noChange;
  }

  /** Whether entry `i` is a change to write (not a key that had no value when the map began and is deleted now). */
  isChange(i: number): boolean {
    if (this.#retired) throw usedAfterRetire();
    return this.#absent[i] === 0 || this.#values[i] !== null;
  }

  /** Bytes of the keys held. */
  get keyBytes(): number {
    return this.#used;
  }

  /**
   * Whether recording the keys of `ops` keeps this map within half of
   * `changedKeysLimit` (a bound: three bytes per UTF-16 unit, repeated keys
   * counted each time). The engine asks before it writes a batch to the WAL
   * and drops the map when not, so a commit never fails past the WAL append.
   */
  hasRoomFor(ops: readonly BatchOp[]): boolean {
    let units = 0;
    for (let i = 0; i < ops.length; i++) units += ops[i]!.key.length;
    return this.#used + 3 * units <= changedKeysLimit.bytes / 2;
  }

  /**
   * Sets `key` to `value` (replacing its value when already present: the key
   * keeps its place). `wasAbsent`: the key had no value in the state before
   * this change; it counts only for a key new to the map, whose first change
   * this is (then it had none when the map began). False is always safe: a
   * deleted key is then written as a tombstone.
   */
  set(key: string, value: V, wasAbsent = false): this {
    if (this.#retired) throw usedAfterRetire();
    const at = this.#used;
    return this.#put(this.#probe(at, this.#encode(key, at)), value, wasAbsent);
  }

  /**
   * `set` of the key whose UTF-8 bytes are `bytes[from, from + len)` (a
   * well-formed key, as `set` takes): the commit's keys as the WAL wrote
   * them, copied and hashed in one pass instead of encoded again.
   */
  setBytes(bytes: Uint8Array, from: number, len: number, value: V, wasAbsent = false): this {
    if (this.#retired) throw usedAfterRetire();
    const at = this.#used;
    this.#copyIn(bytes, from, len, at);
    return this.#put(this.#probe(at, len), value, wasAbsent);
  }

  /**
   * `setBytes` of the key whose UTF-8 bytes are `bytes[headFrom, headFrom +
   * headLen)` followed by `bytes[from, from + len)`: a key the WAL wrote as
   * the bytes it shares with an earlier key and the rest.
   */
  setJoined(bytes: Uint8Array, headFrom: number, headLen: number, from: number, len: number, value: V, wasAbsent = false): this {
    if (this.#retired) throw usedAfterRetire();
    const at = this.#used;
    if (headLen === 0) this.#copyIn(bytes, from, len, at);
    else this.#copyJoined(bytes, headFrom, headLen, from, len, at);
    return this.#put(this.#probe(at, headLen + len), value, wasAbsent);
  }

  /** Sets entry `e` (from `#probe`; -1: the probed key, a new entry) to `value`. */
  #put(e: number, value: V, wasAbsent: boolean): this {
    const n = this.#count;
    if (e >= 0) {
      // An entry's absence at the start was settled by its first change; only whether it is deleted now changes.
      if (this.#absent[e] === 1) this.#noChange += (value === null ? 1 : 0) - (this.#values[e] === null ? 1 : 0);
      this.#values[e] = value;
      return this;
    }
    if (this.#used + this.#len > changedKeysLimit.bytes) throw new RangeError(`a changed-keys map holds at most ${changedKeysLimit.bytes} bytes of keys`);
    // Not present: `#probe` left the key's bytes past the used ones, its hash and its empty slot.
    this.#table[this.#slot] = n + 1;
    if (n + 1 >= this.#hashes.length) this.#growEntries();
    this.#hashes[n] = this.#hash;
    this.#absent[n] = wasAbsent ? 1 : 0;
    if (wasAbsent && value === null) this.#noChange++;
    this.#used += this.#len;
    this.#starts[n + 1] = this.#used;
    if (n < this.#values.length) this.#values[n] = value;
    else this.#values.push(value);
    this.#count = n + 1;
    if (2 * (n + 1) > this.#table.length) this.#growTable();
    return this;
  }

  /** The value of `key`, or undefined when it did not change. */
  get(key: string): V | undefined {
    if (this.#retired) throw usedAfterRetire();
    const e = this.#find(key);
    return e >= 0 ? this.#values[e] : undefined;
  }

  /** The entry of `key`, or -1 (then `#slot` is the empty slot it would take and `#len` its length, encoded past the used bytes; `#hash` its hash either way). */
  #find(key: string): number {
    const at = this.#used;
    return this.#probe(at, this.#encode(key, at));
  }

  /** The entry of the key encoded at `at` (past the used bytes) with hash `#hash`, or -1 (then `#slot` is the empty slot it would take and `#len` its length). */
  #probe(at: number, len: number): number {
    const h = this.#hash;
    const table = this.#table;
    const mask = table.length - 1;
    for (let s = h & mask, probes = 1; ; s = (s + 1) & mask, probes++) {
      const e = table[s]!;
      if (e === 0) {
        this.#slot = s;
        this.#len = len;
        if (probes > this.#longestProbe) this.#longestProbe = probes;
        return -1;
      }
      if (this.#hashes[e - 1] === h && this.#equalsAt(e - 1, at, len)) {
        if (probes > this.#longestProbe) this.#longestProbe = probes;
        return e - 1;
      }
    }
  }

  /** The value of entry `i` (insertion order). */
  valueAt(i: number): V {
    if (this.#retired) throw usedAfterRetire();
    return this.#values[i]!;
  }

  /** The key of entry `i`, decoded. */
  keyAt(i: number): string {
    if (this.#retired) throw usedAfterRetire();
    return this.#bytes.toString("utf8", this.#starts[i]!, this.#starts[i + 1]!);
  }

  /** Compares the keys of entries `a` and `b` in `compareKeys` order (UTF-8 byte order is code point order). */
  compare(a: number, b: number): number {
    if (this.#retired) throw usedAfterRetire();
    // Its own loop over one array, not a comparison shared with the merges: as a checkpoint's sort
    // comparator a shared one cost a 1M-job fill about a fifth more CPU (bench/RESULTS.md, "One bytewise
    // key comparison, undone").
    const bytes = this.#bytes;
    let i = this.#starts[a]!;
    const ie = this.#starts[a + 1]!;
    let j = this.#starts[b]!;
    const je = this.#starts[b + 1]!;
    for (; i < ie && j < je; i++, j++) {
      const d = bytes[i]! - bytes[j]!;
      if (d !== 0) return d;
    }
    return ie - i - (je - j);
  }

  *entries(): IterableIterator<[string, V]> {
    if (this.#retired) throw usedAfterRetire();
    // keyAt throws if the map is retired while this runs (its count drops to 0 then, which would end the loop quietly).
    for (let i = 0; i < this.#count || this.#retired; i++) yield [this.keyAt(i), this.#values[i]!];
  }

  /**
   * Takes in the changes of `later`, a map begun where this one ends (a
   * compaction's carry and the changes since its cut). The run written from
   * the result is laid over the state at either start, so a key is no
   * change only when it was absent at both: a key `later` found held (this
   * map's put, deleted after the cut) is a change, whatever this map found.
   */
  mergeLater(later: ChangedKeys<V>): void {
    if (this.#retired || later.#retired) throw usedAfterRetire();
    for (let i = 0; i < later.#count; i++) {
      if (!later.isChange(i)) continue;
      const from = later.#starts[i]!;
      const len = later.#starts[i + 1]! - from;
      const at = this.#used;
      this.#copyIn(later.#bytes, from, len, at);
      const e = this.#probe(at, len);
      const absentAfter = later.#absent[i] === 1;
      if (e >= 0 && !absentAfter && this.#absent[e] === 1) {
        if (this.#values[e] === null) this.#noChange--;
        this.#absent[e] = 0;
      }
      this.#put(e, later.#values[i]!, absentAfter);
    }
  }

  /** The entries whose value passes `test`, in insertion order; decodes only their keys. */
  *entriesWhere(test: (v: V) => boolean): IterableIterator<[string, V]> {
    if (this.#retired) throw usedAfterRetire();
    for (let i = 0; i < this.#count || this.#retired; i++) {
      if (this.#retired) throw usedAfterRetire();
      const v = this.#values[i]!;
      if (test(v)) yield [this.keyAt(i), v];
    }
  }

  *keys(): IterableIterator<string> {
    if (this.#retired) throw usedAfterRetire();
    for (let i = 0; i < this.#count || this.#retired; i++) yield this.keyAt(i);
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }

  /** Writes `key`'s UTF-8 bytes at `at` (past the used bytes, not yet taken) and their hash into `#hash`; returns their length. */
  #encode(key: string, at: number): number {
    const n = key.length;
    if (at + n * 3 > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, at + n * 3));
      this.#bytes.copy(grown, 0, 0, this.#used);
      this.#bytes = grown;
    }
    const bytes = this.#bytes;
    // ASCII (every queue and workflow key): encode and hash in one pass.
    let h = this.#basis;
    for (let i = 0; i < n; i++) {
      const c = key.charCodeAt(i);
      if (c >= 0x80) return this.#encodeUtf8(key, at);
      bytes[at + i] = c;
      h = hashStep(h, c);
    }
    this.#hash = mixed(h);
    return n;
  }

  /** Copies `len` key bytes from `src[from..]` to `at` (past the used bytes, not yet taken) and leaves their hash in `#hash`. */
  #copyIn(src: Uint8Array, from: number, len: number, at: number): void {
    if (at + len > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, at + len));
      this.#bytes.copy(grown, 0, 0, this.#used);
      this.#bytes = grown;
    }
    const bytes = this.#bytes;
    let h = this.#basis;
    for (let i = 0; i < len; i++) {
      const b = src[from + i]!;
      bytes[at + i] = b;
      h = hashStep(h, b);
    }
    this.#hash = mixed(h);
  }

  /** `#copyIn` of `src[headFrom, headFrom + headLen)` followed by `src[from, from + len)`. */
  #copyJoined(src: Uint8Array, headFrom: number, headLen: number, from: number, len: number, at: number): void {
    const total = headLen + len;
    if (at + total > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, at + total));
      this.#bytes.copy(grown, 0, 0, this.#used);
      this.#bytes = grown;
    }
    const bytes = this.#bytes;
    let h = this.#basis;
    for (let i = 0; i < headLen; i++) {
      const b = src[headFrom + i]!;
      bytes[at + i] = b;
      h = hashStep(h, b);
    }
    at += headLen;
    for (let i = 0; i < len; i++) {
      const b = src[from + i]!;
      bytes[at + i] = b;
      h = hashStep(h, b);
    }
    this.#hash = mixed(h);
  }

  #encodeUtf8(key: string, at: number): number {
    const bytes = this.#bytes;
    const len = bytes.write(key, at, "utf8");
    let h = this.#basis;
    for (let i = at; i < at + len; i++) h = hashStep(h, bytes[i]!);
    this.#hash = mixed(h);
    return len;
  }

  /** Whether entry `e`'s key is `#bytes[at, at + len)`. */
  #equalsAt(e: number, at: number, len: number): boolean {
    const s = this.#starts[e]!;
    if (this.#starts[e + 1]! - s !== len) return false;
    const bytes = this.#bytes;
    for (let i = 0; i < len; i++) if (bytes[s + i] !== bytes[at + i]) return false;
    return true;
  }

  #growEntries(): void {
    const hashes = new Uint32Array(this.#hashes.length * 2);
    hashes.set(this.#hashes);
    this.#hashes = hashes;
    const starts = new Uint32Array(hashes.length + 1);
    starts.set(this.#starts);
    this.#starts = starts;
    const absent = new Uint8Array(hashes.length);
    absent.set(this.#absent);
    this.#absent = absent;
  }

  #growTable(): void {
    const table = new Int32Array(this.#table.length * 2);
    const mask = table.length - 1;
    const hashes = this.#hashes;
    for (let e = 0; e < this.#count; e++) {
      let s = hashes[e]! & mask;
      while (table[s] !== 0) s = (s + 1) & mask;
      table[s] = e + 1;
    }
    this.#table = table;
  }
}
