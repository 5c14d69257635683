/**
 * @module LocalStore's put thread: one worker thread that makes a whole put
 * (create, `O_DSYNC` write, stat, link or rename, close, unlink, directory
 * open, fsync and close) in one trip, instead of two trips to the thread
 * pool with main-thread calls between them. The main thread wakes the
 * thread through a futex on a shared buffer and is woken once, by the
 * answer: two thread wake-ups per put instead of four, and the put's
 * metadata calls (0.05-0.3 ms on a loaded disk) off the event loop. The
 * thread removes a create-if-absent put's temporary name before the
 * directory fsync (so the directory on disk never holds it beside the
 * object's name: local-put-worker.ts), answers once that fsync returns, and
 * closes its files after that: closing changes nothing on disk.
 *
 * A put may name the next put's temporary file (`next`): the thread creates
 * it after the tidy-up, while the main thread runs what the answer
 * released, and the next put into that directory passes that name as its
 * temporary one and writes into the open file (the create, 0.1-0.8 ms at load 7-23, off
 * its path). The thread also fsyncs that file while the gaps between its
 * answers and the next requests leave it the time (`SYNC_AHEAD_POLICY`),
 * which takes a directory write off the next put's `O_DSYNC` write on ext4
 * without a journal. That file is dropped by any other put, by `close()`, by a
 * delete that empties its directory (`releaseSpare`) and at the process's
 * exit; a crash leaves it as an empty temporary name, removed at the next
 * open like a put's.
 *
 * Shared buffer: six Int32 control words (see `SLOT`), three BigInt64 for
 * the answer's stat, then the data area: the body followed by the
 * temporary path, the final path, the directory and the next put's
 * temporary path (empty for none), joined by NUL (a request), or an error's
 * text (an answer).
 *
 * One put at a time per thread: the store sends a put to a thread only when
 * it is idle and the body fits. With `LocalStoreOptions.secondPutThread`, a
 * put that comes while the process's first thread is busy goes to a second
 * one (`PutThreadPair`, started by the first such put), so two puts overlap
 * their disk writes without the second's file calls on the main thread;
 * others go through the pool as before. The thread
 * is started by the first put that uses it, unreferenced while idle (it
 * never keeps the process alive), and ended by `close()` (asked to stop
 * between puts, once its tidy-up is done). When it stops on its own
 * (killed, out of memory), a put in flight fails with `PutThreadStopped`
 * and later puts go through the pool.
 */
import { Buffer } from "node:buffer";
import { unlinkSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { CONTROL_WORDS, HEADER_BYTES, OUTCOME, PUT_WORKER_SOURCE, SLOT, STAT_OFFSET, STATE } from "./local-put-worker.js";

/** Bodies up to this size go through the thread; larger ones (their write dominates) through the pool. */
export const PUT_THREAD_MAX_BODY = 256 * 1024;
/** Room for the four paths: four times Linux's PATH_MAX (4,096 bytes each). */
const PATH_ROOM = 4 * 4096;
/** The thread's heap: it allocates a few small objects per put and keeps none. */
const RESOURCE_LIMITS = { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 };

/** The file's identity as its stat gave it, for the etag. */
export interface PutThreadStat {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
}

/** A put the thread could not finish: `objectInPlace` when it failed at the directory fsync, after the link. */
export class PutThreadFailure {
  constructor(
    readonly error: Error,
    /** The object's file, when the failure came after the link (the directory fsync). */
    readonly inPlace: PutThreadStat | undefined,
  ) {}
}

/** The thread could not be started: nothing was done, the put goes through the pool. */
export class PutThreadUnavailable extends Error {
  constructor(cause: unknown) {
    super("the put thread could not be started", { cause });
  }
}

/** The thread stopped with a put in flight: whether the object was written is unknown. */
export class PutThreadStopped extends Error {
  constructor(reason: string) {
    super(`the thread making this store's puts stopped (${reason}); whether the object was written is unknown`);
  }
}

/**
 * `Buffer`'s fill with a byte array as the value is one `memcpy` of it
 * (when it is as long as the range), also into a view of shared memory;
 * `Uint8Array.prototype.set` into shared memory copies with relaxed atomic
 * stores instead (V8 must assume another thread reads it meanwhile; none
 * does here: the thread reads the request only after the state word says
 * so, and `Atomics.store` orders the copy before that).
 */
const copyIntoShared: (this: Uint8Array, value: Uint8Array, offset: number, end: number) => Uint8Array = Buffer.prototype.fill;

/** `Atomics.waitAsync` (Node 16+; the project's TypeScript library predates its type). */
const waitAsync = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string } })
  .waitAsync;

/**
 * One start of the thread: its worker, its shared buffer's views (made
 * once, not per put) and how a put on it settles (one function per start,
 * so a put allocates no closure of its own).
 */
interface Run {
  readonly worker: Worker;
  readonly ctl: Int32Array;
  /** The data area: a request's body and paths, an answer's error text. */
  readonly data: Uint8Array;
  /** The answer's stat words. */
  readonly stat: BigInt64Array;
  /** Settles the put in flight once its wait on the state word ended: the answer, or the thread's stop. */
  readonly settle: () => PutThreadStat;
  /** Why the worker stopped, once it did (the put in flight then fails with it). */
  stopReason: string | undefined;
}

export class PutThread {
  /** The running thread, if any. */
  #run: Run | undefined;
  /** Settles when the running thread has exited (for `close()`). */
  #exited: Promise<void> | undefined;
  /** The put in flight: `close()` waits for it. */
  #inFlight: Promise<unknown> | undefined;
  /** Set once the thread stopped on its own: the store's puts go through the pool from then on. */
  #broken = false;
  /** The running or last `close()`: a second call waits for it. */
  #closing: Promise<void> | undefined;
  /** The temporary file the last put asked the thread to make for the next one, and its directory. */
  #spare: { dir: string; path: string } | undefined;
  readonly #encoder = new TextEncoder();

  /** Whether a put of `bodyLength` bytes can go through the thread now. */
  canTake(bodyLength: number): boolean {
    return this.#inFlight === undefined && !this.#broken && bodyLength <= PUT_THREAD_MAX_BODY;
  }

  /** The temporary name of the file made ahead for the next put into `dir`, if the last put asked for one there. */
  spareIn(dir: string): string | undefined {
    return this.#spare?.dir === dir ? this.#spare.path : undefined;
  }

  /**
   * Makes the put; resolves to the file's stat once it is durable, rejects
   * with a `PutThreadFailure` (the system call's error) or `PutThreadStopped`.
   * `temp` may be the name `spareIn(dir)` gave; `next`, a fresh temporary
   * name in `dir`, asks for the next put's file to be made ahead.
   */
  put(temp: string, target: string, dir: string, body: Uint8Array, createOnly: boolean, next?: string): Promise<PutThreadStat> {
    if (!this.canTake(body.length)) throw new Error("the put thread is busy or stopped; check canTake() first");
    // The thread drops a file made ahead unless this put writes into it: either way, it is this put's to name.
    this.#spare = next === undefined ? undefined : { dir, path: next };
    let run: Run;
    try {
      run = this.#start();
    } catch (err) {
      return Promise.reject(err);
    }
    const { ctl, data } = run;
    // Straight into the buffer the thread writes from, the body's only copy on this thread: one memcpy
    // (`set` into shared memory copies word by word, 1-5 µs for a 29 KB WAL object against 0.3).
    if (body.length > 0) copyIntoShared.call(data, body, 0, body.length);
    const paths = this.#encoder.encodeInto(`${temp}\0${target}\0${dir}\0${next ?? ""}`, data.subarray(body.length));
    ctl[SLOT.bodyLength] = body.length;
    ctl[SLOT.textLength] = paths.written;
    ctl[SLOT.flags] = createOnly ? 1 : 0;
    // A wait on shared memory holds no event loop open: the thread, referenced while the put is in flight, does.
    run.worker.ref();
    Atomics.store(ctl, SLOT.state, STATE.asked);
    Atomics.notify(ctl, SLOT.state);
    // One promise and one reaction per put: the thread's stop ends the same wait (see `#start`), so nothing races it.
    const waited = waitAsync(ctl, SLOT.state, STATE.asked);
    // Answered already (between the notify and the wait): settled in a microtask, after `#inFlight` is set.
    const done = (waited.async ? (waited.value as Promise<string>) : Promise.resolve("not-equal")).then(run.settle);
    this.#inFlight = done;
    return done;
  }

  /**
   * The put in flight on `run`, once its wait ended: frees the thread
   * before the caller's continuation runs (a put made right after this one
   * settles finds it free), then reads the answer, or fails the put when
   * the thread stopped instead of answering.
   */
  #settle(run: Run): PutThreadStat {
    this.#inFlight = undefined;
    // Between puts the thread holds nothing: it never keeps the process alive.
    run.worker.unref();
    const ctl = run.ctl;
    if (Atomics.load(ctl, SLOT.state) !== STATE.answered) throw new PutThreadStopped(run.stopReason ?? "no answer");
    const outcome = ctl[SLOT.flags];
    const stat = run.stat;
    const file = { ino: stat[0]!, size: stat[1]!, mtimeNs: stat[2]! };
    Atomics.store(ctl, SLOT.state, STATE.idle);
    if (outcome === OUTCOME.done) return file;
    const [code, syscall, path, message] = new TextDecoder().decode(run.data.subarray(0, ctl[SLOT.textLength])).split("\0");
    const error = Object.assign(new Error(message), code ? { code } : {}, syscall ? { syscall } : {}, path ? { path } : {});
    throw new PutThreadFailure(error, outcome === OUTCOME.failedSync ? file : undefined);
  }

  #start(): Run {
    if (this.#run !== undefined) return this.#run;
    // Zero-filled: the thread waits while the state word is idle.
    const buffer = new SharedArrayBuffer(HEADER_BYTES + PUT_THREAD_MAX_BODY + PATH_ROOM);
    const ctl = new Int32Array(buffer, 0, CONTROL_WORDS);
    let worker: Worker;
    try {
      worker = new Worker(PUT_WORKER_SOURCE, { eval: true, workerData: { buffer }, resourceLimits: RESOURCE_LIMITS });
    } catch (err) {
      // Worker threads refused (a permission model, an embedder without them): the pool for good.
      this.#broken = true;
      throw new PutThreadUnavailable(err);
    }
    const run: Run = {
      worker,
      ctl,
      data: new Uint8Array(buffer, HEADER_BYTES),
      stat: new BigInt64Array(buffer, STAT_OFFSET, 3),
      settle: () => this.#settle(run),
      stopReason: undefined,
    };
    const stop = (reason: string) => {
      // Ends the wait of a put in flight, if any (also when close() let go of this worker and waits for
      // that put: it would wait for an answer for ever); one the thread answered already keeps its answer.
      run.stopReason ??= reason;
      if (Atomics.compareExchange(ctl, SLOT.state, STATE.asked, STATE.lost) === STATE.asked) Atomics.notify(ctl, SLOT.state);
      if (this.#run !== run) return;
      this.#run = undefined;
      this.#broken = true;
      // Made or not before the thread stopped, its name is this process's to remove (no later open would: the pid runs).
      this.#removeSpare();
    };
    worker.on("error", (err: unknown) => stop(err instanceof Error ? err.message : String(err)));
    this.#exited = new Promise<void>((resolve) =>
      worker.on("exit", (code: number) => {
        running.delete(ctl);
        stop(`exit code ${code}`);
        resolve();
      }),
    );
    worker.unref();
    this.#run = run;
    awaitTidyAtExit(ctl, () => this.#removeSpare());
    return run;
  }

  /** Removes the name of the file made ahead, from this thread: only while the put thread is stopped or idle. */
  #removeSpare(): void {
    const spare = this.#spare;
    this.#spare = undefined;
    if (spare === undefined) return;
    try {
      unlinkSync(spare.path);
    } catch {
      // Never made, or gone already.
    }
  }

  /**
   * Removes the file made ahead in `dir`, if any, so that a delete can remove
   * the emptied directory. Only between puts, the thread's tidy-up done (the
   * thread touches its file only when asked); otherwise the directory stays,
   * as it would beside a put in flight. The thread's descriptor of the file
   * goes with the next put, which names another.
   */
  releaseSpare(dir: string): void {
    const run = this.#run;
    if (this.#spare?.dir !== dir || this.#inFlight !== undefined || run === undefined) return;
    if (Atomics.load(run.ctl, SLOT.tidy) !== 0) return;
    this.#removeSpare();
  }

  /** Ends the thread once the put in flight (if any) has settled; a later put starts a new one. */
  close(): Promise<void> {
    const run = this.#run;
    // A second call while the first waits ends with it, not before the thread did.
    if (run === undefined) return this.#closing ?? Promise.resolve();
    this.#run = undefined;
    // The thread drops its file made ahead when it stops.
    this.#spare = undefined;
    const inFlight = this.#inFlight;
    const ctl = run.ctl;
    const exited = this.#exited!;
    this.#closing = (async () => {
      // The thread ends between puts: one in flight finishes first, and so does the tidy-up the thread makes
      // after answering (closes, the next put's file), which terminating it could cut short.
      await inFlight?.catch(() => undefined);
      Atomics.store(ctl, SLOT.state, STATE.stop);
      Atomics.notify(ctl, SLOT.state);
      await exited;
    })();
    return this.#closing;
  }

  /** How many files made ahead the running thread fsynced so far (benches and tests). */
  get syncedAhead(): number {
    return this.#run === undefined ? 0 : Atomics.load(this.#run.ctl, SLOT.syncedAhead);
  }

  /** Whether the thread stopped on its own (or could not start): its store's puts go through the pool. */
  get stopped(): boolean {
    return this.#broken;
  }

  /** Whether a put is in flight on it. */
  get busy(): boolean {
    return this.#inFlight !== undefined;
  }

  /** Whether the thread runs now (tests). */
  get running(): boolean {
    return this.#run !== undefined;
  }

  /** Resolves once the thread's tidy-up after its last answer (the next put's file made among it) is done (tests). */
  async tidied(): Promise<void> {
    const run = this.#run;
    if (run === undefined) return;
    const worker = run.worker;
    const waited = waitAsync(run.ctl, SLOT.tidy, 1);
    if (!waited.async) return;
    // A wait on shared memory holds no event loop open: the thread, referenced meanwhile, does.
    worker.ref();
    try {
      await waited.value;
    } finally {
      if (this.#inFlight === undefined) worker.unref();
    }
  }

  /** Stops the thread as a crash would (tests): the put in flight, if any, fails with `PutThreadStopped`. */
  async stopForTest(): Promise<void> {
    await this.#run?.worker.terminate();
  }
}

/** How long a process that exits waits for the thread's tidy-up after its last put (a hung disk must not hold the exit). */
const EXIT_TIDY_WAIT_MS = 2_000;
/** The control words of this process's running threads, for the exit hook, each with how to remove its file made ahead. */
const running = new Map<Int32Array, () => void>();
let exitHooked = false;

/**
 * The thread is unreferenced between puts, so the process may exit while
 * it still tidies up after its last answer: the exit then waits for that
 * (microseconds as a rule) and removes the file it made ahead, so a clean
 * exit leaves no temporary name behind.
 */
function awaitTidyAtExit(ctl: Int32Array, removeSpare: () => void): void {
  if (!exitHooked) {
    exitHooked = true;
    process.once("exit", () => {
      for (const [words, remove] of running) {
        Atomics.wait(words, SLOT.tidy, 1, EXIT_TIDY_WAIT_MS);
        remove();
      }
    });
  }
  running.set(ctl, removeSpare);
}

/**
 * The put threads a store uses: the first takes every put it is free for;
 * the second, if any, started by the first put that comes while the first
 * is busy, takes that one. Its puts may end in either order: a store that needs them in order
 * waits for each before it counts the next (the engine acknowledges its WAL
 * in sequence order, and its recovery stops at the first object missing).
 * Once either thread stopped on its own, no put goes to either.
 */
export class PutThreadPair {
  readonly #first: PutThread;
  readonly #second: PutThread | undefined;

  constructor(first: PutThread, second: PutThread | undefined) {
    this.#first = first;
    this.#second = second;
  }

  /**
   * The thread a create-if-absent put of `bodyLength` bytes into `dir` goes
   * to now, or undefined (the thread pool then): a free one, the one that
   * holds the file made ahead for `dir` first, else the first.
   */
  free(bodyLength: number, dir: string): PutThread | undefined {
    const first = this.#first;
    const second = this.#second;
    if (second === undefined) return first.canTake(bodyLength) ? first : undefined;
    if (first.stopped || second.stopped) return undefined;
    const firstFree = first.canTake(bodyLength);
    if (firstFree && (first.spareIn(dir) !== undefined || second.spareIn(dir) === undefined || second.busy)) return first;
    return second.canTake(bodyLength) ? second : firstFree ? first : undefined;
  }

  /** Puts in flight on the two threads (benches and tests). */
  get inFlight(): number {
    return (this.#first.busy ? 1 : 0) + (this.#second?.busy ? 1 : 0);
  }

  /** How many of the two threads run now (benches and tests). */
  get started(): number {
    return (this.#first.running ? 1 : 0) + (this.#second?.running ? 1 : 0);
  }

  /** See `PutThread.releaseSpare`: each thread's file made ahead in `dir`. */
  releaseSpare(dir: string): void {
    this.#first.releaseSpare(dir);
    this.#second?.releaseSpare(dir);
  }
}

let shared: PutThread | undefined;
let alone: PutThreadPair | undefined;
let pair: PutThreadPair | undefined;

/**
 * The process's first put thread, shared by its LocalStores (one isolate,
 * about 10 MB of RSS, however many stores are open); made on first use,
 * started by the first put it takes.
 */
export function sharedPutThread(): PutThread {
  shared ??= new PutThread();
  return shared;
}

/**
 * The process's put threads for a store: the first one (`sharedPutThread`)
 * and, with `second`, a second one, which costs another isolate (about
 * 9 MB) only once a put comes while the first is busy.
 */
export function sharedPutThreads(second: boolean): PutThreadPair {
  if (!second) {
    alone ??= new PutThreadPair(sharedPutThread(), undefined);
    return alone;
  }
  pair ??= new PutThreadPair(sharedPutThread(), new PutThread());
  return pair;
}
