/**
 * @module Group commit: batches committed within one flush window share a WAL
 * object; several objects may be in flight; durability is reported strictly
 * in sequence order.
 *
 * Invariants:
 * - A sequence number is assigned when an object is sealed and never reused.
 * - `durableSeq`: every object up to it is stored. A waiter on sequence `s`
 *   resolves only once `durableSeq >= s`, even if `s` landed earlier.
 * - No put is issued for a sequence beyond `durableSeq + maxInflight`, and
 *   `maxInflight < WAL_FENCE_JUMP`: a fenced writer's late puts can only land
 *   in the range a new writer skips (see layout.ts).
 * - After the first fatal error nothing is sent again and every waiter, now
 *   or later, rejects with that error.
 *
 * When to seal (leader/follower): with no WAL put in flight, the open object
 * is sealed at the end of the current event-loop turn, so an idle engine pays
 * one write per commit and no window. While puts are in flight, commits keep
 * gathering until the oldest put lands or `flushIntervalMs` passes, whichever
 * comes first: batching grows with load instead of being paid by every commit.
 * While at least `MIN_OBJECT_BATCHES` commits wait in objects not yet
 * stored or not yet released, a smaller open object keeps gathering past
 * its window and past release steps, until it reaches that size or those
 * commits drop below it (each landing and release step lowers them; no
 * timer polls). Their release brings the next commits: against a slow
 * store an object then holds two release groups instead of one, half the
 * puts per commit, for a wait of at most the puts already in flight. After
 * a slow put that hold is bounded (wal-gather-bound.ts): it ends once the
 * object was open for a share of the measured put latency (never less than
 * the window), and the object goes beside the puts in flight, so a commit
 * waits at most that bound and then its own put, where unbounded it waited
 * for a landing (about half a round trip more at 100 writers). An object
 * that holds enough commits at a release step with fewer than
 * `MIN_OBJECT_BATCHES` left to release takes those too, at the release's
 * end, rather than leave them an object that would go alone at its bound.
 * One committer at a time never waits for it (nothing is in flight). With
 * `walCohorts` above 1, an object may also go before the end of its turn,
 * once it holds its cohort's share of the last wave (wal-cohorts.ts).
 *
 * Release by groups: the commits of one object wait on promises shared by at
 * most `RELEASE_GROUP` commits each. Once an object (and every earlier one)
 * is stored, its groups are resolved one per macrotask, in order, and the
 * commits the previous group's continuations made are sealed before the
 * next group goes. Resolving every commit of a large object at once would
 * run all their continuations breadth-first in one turn (the microtask
 * queue): none would commit again until all had run, and the next put would
 * start only after the CPU of the whole wave. By groups, the first group's
 * next commits are on their way to the store while the later groups still
 * run, so IO and CPU overlap and many writers awaiting one object stop
 * moving in lock step.
 */
import { FencedError, StoreCorruptedError, TaqubaError } from "../errors.js";
import { lastOf } from "../own-fields.js";
import type { ObjectStore } from "../store/object-store.js";
import { WAL_FENCE_JUMP, walKey } from "./layout.js";
import type { RetryPolicy } from "./retry.js";
import { createOnce } from "./store-ops.js";
import { lendBody, putBodyReleased } from "../store/put-body.js";
import { putsContend } from "../store/put-contention.js";
import type { ByteWriter } from "./byte-io.js";
import { SpareBuffers } from "./spare-buffers.js";
import { emptyObjects } from "./array-kinds.js";
import { CohortSeal } from "./wal-cohorts.js";
import { GatherBound, holdsOpen } from "./wal-gather-bound.js";
import { WalBuilder, decodeWal, type EncodedKeys } from "./wal-format.js";
import type { BatchOp } from "./write-batch.js";
import { timeWalPut } from "../telemetry/metrics.js";

/**
 * Commits released per macrotask once their object is durable (see the module
 * documentation). Small enough that a group's continuations take a few
 * milliseconds of CPU, large enough to keep the puts per commit low.
 */
export const RELEASE_GROUP = 25;

/**
 * `slowPutMs`: a put that took at least this long makes the next release go by groups;
 * a faster one releases every commit at once. Against a store that answers
 * in well under a group's CPU (memory, a local disk), groups gain no
 * overlap and only cost extra turns and smaller WAL objects. A mutable
 * object, internal to the engine, so tests can pin either way.
 */
export const releaseTuning = { slowPutMs: 4 };

/**
 * The fewest commits an object is sealed with while at least as many wait
 * in objects not yet stored or released (see the module documentation): two release
 * groups, so that a slow store's objects stop shrinking to one group each.
 */
export const MIN_OBJECT_BATCHES = 2 * RELEASE_GROUP;

/** Smallest first buffer of a WAL object, in bytes. */
const MIN_FIRST_BUFFER = 1024;

/** What a wait on a sequence already durable and released answers: nothing to wait for, so no promise of its own. */
const RESOLVED: Promise<void> = Promise.resolve();

/** The largest buffer kept for the next objects to write into (see `#spare`). */
const MAX_SPARE_BYTES = 1024 * 1024;

/** Settings of a `WalWriter`, resolved by the engine. */
export interface WalWriterOptions {
  flushIntervalMs: number;
  maxWalBytes: number;
  maxInflight: number;
  retry: RetryPolicy;
  /** Cohorts a wave of commits is split into (wal-cohorts.ts); 1 seals at the end of the turn only. */
  cohorts: number;
}

interface Waiter {
  promise: Promise<void>;
  /** The commits appended under it (none for a wait on a sequence number). */
  commits: number;
  resolve(): void;
  reject(err: unknown): void;
}

function newWaiter(): Waiter {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject, commits: 0 };
}

interface Sealed {
  seq: number;
  bytes: Buffer;
  /** The writer `bytes` lies in, handed back to `#spare` once stored. */
  writer: ByteWriter;
  /** The groups of commits waiting for it, in commit order. */
  waiters: Waiter[];
  /** How many commits it holds. */
  batches: number;
  /** Its bytes with every key whole (`WalBuilder.wholeBytes`): what the checkpoint trigger counts. */
  wholeBytes: number;
  landed: boolean;
}

/** Statistics for benchmarks and checkpoint triggers. */
export interface WalStats {
  objects: number;
  /** Bytes of the objects sealed, counted with every key whole (what the checkpoint trigger counts). */
  bytes: number;
  batches: number;
}

/** The engine's group-commit writer; see the module documentation for its invariants. */
export class WalWriter {
  readonly #store: ObjectStore;
  readonly #prefix: string;
  readonly #epoch: number;
  readonly #opts: WalWriterOptions;
  readonly #onLanded: (seq: number, bytes: number) => void;
  readonly #onFatal: (err: TaqubaError) => void;

  #open: WalBuilder | undefined;
  /**
   * The groups waiting for the open object; the last one takes commits until it holds `RELEASE_GROUP`.
   * This writer's lists are made of objects' kind (see array-kinds): a `[]` here is another class to
   * code optimized for the previous writer's, deoptimized by the next store the process opens.
   */
  #openWaiters: Waiter[] = emptyObjects();
  #lastGroupSize = 0;
  /** Groups whose objects are durable, resolved one per macrotask from `#releaseHead` on. */
  #releasing: (Waiter | undefined)[] = emptyObjects();
  #releaseHead = 0;
  #releaseTimer: NodeJS.Immediate | undefined;
  /** Whether the last put to land took `releaseTuning.slowPutMs` or more: releases then go by groups. */
  #slowPuts = false;
  #timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  #flushDue = false;
  /** The put latency estimate that bounds a hold after slow puts (wal-gather-bound.ts). */
  readonly #gatherBound: GatherBound;
  /** When the open object stops being held (`performance.now()` ms); Infinity: held until landings and releases let it go. */
  #holdUntil = Number.POSITIVE_INFINITY;
  /**
   * The next WAL object's first buffer: the last one's size and a quarter.
   * Kept small when commits are (a step's is under 1 KiB), since Node serves
   * buffers under 4 KiB from a shared slab and allocates each larger one on
   * its own, which cost about 2% of a step's CPU one at a time.
   */
  #lastSize = MIN_FIRST_BUFFER;
  /**
   * Buffers of objects already stored, for the next objects to write into:
   * a fill's WAL objects (a few hundred KiB each) would otherwise each be an
   * allocation outside the heap, and one that lived through its put dies in
   * the old generation and waits there for a mark-compact.
   */
  readonly #spare = new SpareBuffers<ByteWriter>(2, (w) => w.capacity);
  /** Whether the store is done with a put's body once it settles (see store/put-body.ts): else nothing is kept. */
  readonly #reuse: boolean;
  /** Whether a slow put may switch the release to groups: not when the store's puts contend (store/put-contention.ts). */
  readonly #groupsAfterSlowPuts: boolean;

  #nextSeq: number;
  #durableSeq: number;
  /** Sealed objects not yet durable, in sequence order (sent or waiting for the window). */
  #sealed: Sealed[] = emptyObjects();
  #sentUpTo: number;
  /** Commits in `#sealed`: while there are many, their release brings the next ones (see `#holdOpen`). */
  #batchesNotStored = 0;
  /** Commits stored but not yet released: they run and commit again within a few macrotasks. */
  #commitsToRelease = 0;
  #failure: TaqubaError | undefined;
  readonly #cohortSeal: CohortSeal;
  readonly stats: WalStats = { objects: 0, bytes: 0, batches: 0 };

  constructor(
    store: ObjectStore,
    prefix: string,
    epoch: number,
    firstSeq: number,
    opts: WalWriterOptions,
    onLanded: (seq: number, bytes: number) => void,
    onFatal: (err: TaqubaError) => void,
  ) {
    this.#store = store;
    this.#reuse = putBodyReleased(store);
    this.#groupsAfterSlowPuts = !putsContend(store);
    this.#prefix = prefix;
    this.#epoch = epoch;
    this.#opts = { ...opts, maxInflight: Math.max(1, Math.min(opts.maxInflight, WAL_FENCE_JUMP - 1)) };
    this.#nextSeq = firstSeq;
    this.#durableSeq = firstSeq - 1;
    this.#sentUpTo = firstSeq - 1;
    this.#onLanded = onLanded;
    this.#onFatal = onFatal;
    this.#cohortSeal = new CohortSeal(opts.cohorts, putsContend(store));
    this.#gatherBound = new GatherBound(opts.flushIntervalMs);
  }

  /** The last sequence number assigned (the open object has none yet). */
  get lastSeq(): number {
    return this.#nextSeq - 1;
  }

  get durableSeq(): number {
    return this.#durableSeq;
  }

  /** Appends one validated batch to the open object (`room`, `keys`: see `WalBuilder.add`); one it cannot encode throws and leaves the WAL as it was. */
  append(ops: readonly BatchOp[], room?: number, keys?: EncodedKeys): void {
    let open = this.#open;
    if (open === undefined) {
      open = this.#open = new WalBuilder(this.#lastSize, this.#spare.take(this.#lastSize));
      // After slow puts a hold ends at a share of a round trip; else at the landings and releases, as on a fast store.
      // Slow by the average too: one put of a fast store that the system held up must not change how it gathers.
      const bounded = this.#slowPuts && this.#gatherBound.putMs >= releaseTuning.slowPutMs;
      this.#holdUntil = bounded ? performance.now() + this.#gatherBound.holdMs() : Number.POSITIVE_INFINITY;
      this.#armTimer();
    }
    try {
      open.add(ops, room, keys);
    } catch (err) {
      // An object opened for this batch alone would be sealed and stored empty: drop it.
      if (open.batchCount === 0) {
        this.#clearTimer();
        this.#open = undefined;
      }
      throw err;
    }
    if (open.byteLength >= this.#opts.maxWalBytes) this.seal();
  }

  /** A promise for the durability of everything appended so far. */
  waitAppended(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#open === undefined) return this.waitDurable(this.lastSeq);
    const groups = this.#openWaiters;
    let w = lastOf(groups);
    if (w === undefined || this.#lastGroupSize >= RELEASE_GROUP) {
      groups.push((w = newWaiter()));
      this.#lastGroupSize = 0;
    }
    this.#lastGroupSize++;
    w.commits++;
    // A cohort's share gathered: its put starts while the rest of the wave still runs.
    if (this.#cohortSeal.sealsEarly(this.#open.batchCount, this.#sealed.length) && !this.#holdOpen()) this.seal();
    return w.promise;
  }

  /** Resolves when every object up to `seq` is stored (after the commits released before it). */
  waitDurable(seq: number): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (seq <= this.#durableSeq) {
      // One shared promise: a flush with everything durable and released (a wait's end, say) makes none.
      if (this.#releaseHead === this.#releasing.length) return RESOLVED;
      // Durable, but earlier commits are still being released: after them.
      const w = newWaiter();
      this.#releasing.push(w);
      return w.promise;
    }
    const s = this.#sealed[seq - this.#durableSeq - 1];
    if (s === undefined || s.seq !== seq) throw new Error(`internal: no sealed WAL object ${seq}`);
    let w = lastOf(s.waiters);
    if (w === undefined) s.waiters.push((w = newWaiter()));
    return w.promise;
  }

  /** Seals the open object now (if any) and returns the last assigned sequence number. */
  seal(): number {
    const open = this.#open;
    if (open === undefined || this.#failure) return this.lastSeq;
    this.#clearTimer();
    this.#flushDue = false;
    this.#open = undefined;
    const seq = this.#nextSeq++;
    const bytes = open.seal(this.#epoch, seq, this.#durableSeq);
    // Never written over before its put settled (then only when `#reuse`).
    lendBody(bytes);
    this.#lastSize = Math.min(this.#opts.maxWalBytes, Math.max(MIN_FIRST_BUFFER, bytes.length + (bytes.length >> 2)));
    const wholeBytes = bytes.length + open.sharedKeyBytes;
    const sealed: Sealed = { seq, bytes, writer: open.writer, waiters: this.#openWaiters, batches: open.batchCount, wholeBytes, landed: false };
    this.#batchesNotStored += open.batchCount;
    this.#openWaiters = emptyObjects();
    this.#lastGroupSize = 0;
    this.#sealed.push(sealed);
    this.stats.objects++;
    // With every key whole, as the landings are counted: a checkpoint's cut takes its cover from here.
    this.stats.bytes += wholeBytes;
    this.stats.batches += open.batchCount;
    this.#pump();
    return seq;
  }

  /** Stops timers; pending waiters keep waiting for puts already issued. */
  stopTimers(): void {
    this.#clearTimer();
  }

  /** Resolves the commits already durable, rejects every other waiter with `err` and never sends again. */
  fail(err: TaqubaError): void {
    if (this.#failure) return;
    this.#failure = err;
    this.#clearTimer();
    if (this.#releaseTimer !== undefined) clearImmediate(this.#releaseTimer);
    this.#releaseTimer = undefined;
    for (let i = this.#releaseHead; i < this.#releasing.length; i++) this.#releasing[i]?.resolve();
    this.#releasing = emptyObjects();
    this.#releaseHead = 0;
    this.#commitsToRelease = 0;
    for (const w of this.#openWaiters) w.reject(err);
    this.#openWaiters = emptyObjects();
    this.#open = undefined;
    for (const s of this.#sealed) for (const w of s.waiters) w.reject(err);
    this.#sealed = emptyObjects();
    this.#batchesNotStored = 0;
  }

  #armTimer(): void {
    const ms = this.#opts.flushIntervalMs;
    // Idle (nothing sealed and not yet durable): no one to share a window with.
    const idle = this.#sealed.length === 0;
    this.#timer = ms <= 0 || idle ? setImmediate(() => this.#onTimer()) : setTimeout(() => this.#onTimer(), ms);
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer as NodeJS.Timeout);
    clearImmediate(this.#timer as NodeJS.Immediate);
    this.#timer = undefined;
  }

  #windowOpen(): boolean {
    return this.#sentUpTo + 1 <= this.#durableSeq + this.#opts.maxInflight;
  }

  /**
   * Whether the open object should keep gathering past its window: it is
   * small and enough commits wait in objects not yet stored, or stored and
   * not yet released, that their release will bring more. Bounded: each
   * release step and each landing lowers that count, and once it is below
   * `MIN_OBJECT_BATCHES` the object goes.
   */
  #holdOpen(): boolean {
    const open = this.#open;
    // A window of 0 asked for no gathering at all.
    if (open === undefined || this.#opts.flushIntervalMs <= 0) return false;
    const holdUntil = this.#holdUntil;
    const state = {
      gathered: open.batchCount,
      waiting: this.#batchesNotStored + this.#commitsToRelease,
      now: holdUntil === Number.POSITIVE_INFINITY ? 0 : performance.now(),
      holdUntil,
    };
    return holdsOpen(state, MIN_OBJECT_BATCHES);
  }

  /**
   * Whether an object that holds enough commits waits for the rest of the
   * release in progress: fewer than `MIN_OBJECT_BATCHES` are left to
   * release, which would otherwise open an object of their own and go
   * alone once its hold's bound passed. A few more release steps, no more.
   */
  #takesRestOfRelease(): boolean {
    const open = this.#open;
    if (open === undefined || this.#holdUntil === Number.POSITIVE_INFINITY) return false;
    return open.batchCount >= MIN_OBJECT_BATCHES && this.#commitsToRelease > 0 && this.#commitsToRelease < MIN_OBJECT_BATCHES;
  }

  #onTimer(): void {
    this.#timer = undefined;
    // Held: the next landing or release step seals it, or its bound's timer (after slow puts) does.
    if (this.#holdOpen()) {
      const holdUntil = this.#holdUntil;
      if (holdUntil !== Number.POSITIVE_INFINITY) this.#timer = setTimeout(() => this.#onTimer(), Math.max(1, holdUntil - performance.now()));
      return;
    }
    // Not beside the cohorts' puts over a store whose puts contend: the next landing seals it.
    if (this.#cohortSeal.waitsForLanding(this.#sealed.length)) {
      this.#flushDue = true;
      return;
    }
    // With the window full, keep gathering: the object is sealed when a slot frees.
    if (this.#windowOpen()) this.seal();
    else this.#flushDue = true;
  }

  #pump(): void {
    while (!this.#failure && this.#windowOpen()) {
      // Bounded by the length, not by reading past the end: that read finds whatever Object.prototype holds under
      // the index ("0" set there by a careless merge), which was sent as an object.
      const next = this.#sentUpTo - this.#durableSeq;
      if (next >= this.#sealed.length) break;
      const s = this.#sealed[next]!;
      this.#sentUpTo = s.seq;
      void this.#send(s);
    }
    if (this.#flushDue && this.#open !== undefined && this.#windowOpen()) this.seal();
  }

  async #send(s: Sealed): Promise<void> {
    const key = walKey(this.#prefix, s.seq);
    const sentAt = performance.now();
    try {
      const res = await timeWalPut(createOnce(this.#store, key, s.bytes, this.#opts.retry, () => this.#failure !== undefined));
      if (!res.created) throw this.#explainConflict(key, s.seq, res.existing);
    } catch (err) {
      if (this.#failure) return;
      this.#onFatal(err instanceof TaqubaError ? err : new StoreCorruptedError(key, String(err)));
      return;
    }
    if (this.#failure) return;
    s.landed = true;
    const took = performance.now() - sentAt;
    this.#gatherBound.notePut(took);
    this.#slowPuts = this.#groupsAfterSlowPuts && took >= releaseTuning.slowPutMs;
    // Counted with its keys whole: the state the checkpoint pages out grows with the commits, not with how well
    // their keys shared bytes, and a trigger on the stored bytes let a 1M fill's memory between checkpoints grow.
    this.#onLanded(s.seq, s.wholeBytes);
    // Release durability strictly in sequence order.
    let released = false;
    let durableCommits = 0;
    while (this.#sealed.length > 0 && this.#sealed[0]!.landed) {
      const done = this.#sealed.shift()!;
      this.#durableSeq = done.seq;
      this.#batchesNotStored -= done.batches;
      durableCommits += done.batches;
      for (const w of done.waiters) {
        this.#releasing.push(w);
        this.#commitsToRelease += w.commits;
      }
      released = true;
    }
    if (released) this.#cohortSeal.noteLanding(durableCommits, this.#open?.batchCount ?? 0, this.#batchesNotStored);
    // A release in progress goes on at its own pace; otherwise the first group goes now (the pump below sends what it made due).
    if (released && this.#releaseTimer === undefined) this.#releaseStep();
    // Stored: its bytes are read no more (the store took its own copy or is done with them).
    if (this.#reuse && s.writer.capacity <= MAX_SPARE_BYTES) this.#spare.give(s.writer);
    this.#pump();
  }

  /** A release step run from its timer: no caller follows it, so it sends what the step made due itself. */
  #onReleaseTimer = (): void => {
    this.#releaseTimer = undefined;
    this.#releaseStep();
    this.#pump();
  };

  /**
   * One step of the release: marks due what the previous group's
   * continuations committed (the followers gathered while the put was in
   * flight, at the first step), then resolves the next group and comes back
   * on the next macrotask, once that group's continuations have run. Its
   * caller pumps, which sends what it marked due before those continuations
   * run (they are microtasks).
   */
  #releaseStep(): void {
    if (this.#failure) return;
    if (!this.#slowPuts) {
      // A fast store: every durable commit at once, as one wave, and the followers gathered while the put was
      // in flight go now rather than at the end of the window.
      if (this.#open !== undefined && this.#sealed.length === 0) this.#flushDue = true;
      const all = this.#releasing;
      const from = this.#releaseHead;
      this.#releasing = emptyObjects();
      this.#releaseHead = 0;
      this.#commitsToRelease = 0;
      for (let i = from; i < all.length; i++) all[i]?.resolve();
      return;
    }
    if (this.#open !== undefined && !this.#holdOpen() && !this.#takesRestOfRelease()) this.#flushDue = true;
    // By the length: a read past the end finds whatever a prototype holds at that index.
    if (this.#releaseHead >= this.#releasing.length) {
      this.#releasing = emptyObjects();
      this.#releaseHead = 0;
      return;
    }
    const w = this.#releasing[this.#releaseHead]!;
    this.#releasing[this.#releaseHead++] = undefined;
    this.#commitsToRelease -= w.commits;
    // A store that keeps up never empties the queue: drop the released head now and then.
    if (this.#releaseHead >= 1024) {
      this.#releasing = this.#releasing.slice(this.#releaseHead);
      this.#releaseHead = 0;
    }
    w.resolve();
    this.#releaseTimer = setImmediate(this.#onReleaseTimer);
  }

  /** Why our WAL sequence number is taken: a newer writer's fence, or something unexpected. */
  #explainConflict(key: string, seq: number, existing: Uint8Array | null): TaqubaError {
    if (existing === null) return new FencedError(`WAL object "${key}" appeared and vanished while this writer was creating it`);
    let epoch: number;
    try {
      epoch = decodeWal(key, existing, seq).epoch;
    } catch (err) {
      return err instanceof TaqubaError ? err : new StoreCorruptedError(key, String(err));
    }
    if (epoch > this.#epoch) return new FencedError(`WAL object "${key}" was written by writer epoch ${epoch}, this writer has epoch ${this.#epoch}`);
    return new FencedError(`WAL object "${key}" already exists (epoch ${epoch}); another process is writing to this store`);
  }
}
