/**
 * @module Owner election: any number of processes run one over a store,
 * exactly one of them at a time holds the lease (see `lease-chain`) and runs
 * the owner's work; the others stand by and take over when the lease
 * expires or is released.
 *
 * The lease decides who should run, the engine decides who can write: the
 * work a new owner starts opens the queue, which fences the previous
 * writer, so an old owner that was paused past its lease and wakes up again
 * fails its next write and writes nothing. Everything is timed on the
 * given `Clock`; standbys wake on timers, once per renewal interval.
 */
import { ConstructionGate } from "../internal-construction.js";
import { hostname } from "node:os";
import { SystemClock, timedClock, type Clock, type TimedClock } from "../clock.js";
import { FencedError, ValidationError } from "../errors.js";
import { fullLogger, type FullLogger, type Logger, readLogger } from "../logger.js";
import type { ObjectStore } from "../store/object-store.js";
import { passPutMarks } from "../store/pass-put-marks.js";
import { validateObjectKey } from "../store/keys.js";
import { watchThrough } from "../client/store-watch.js";
import {
  createLease,
  deleteLeasesBelow,
  leaseKey,
  MAX_LEASE_DURATION_MS,
  MIN_LEASE_DURATION_MS,
  newerLeaseExists,
  readLease,
  readNewestLease,
  type LeaseEntry,
  type LeaseRecord,
} from "./lease-chain.js";
import { checkOptionalFunction, describeValue, hasMethods, optionFields, readExactOptions } from "../option-values.js";

/** How long a lease lasts after its last renewal, unless set: 15 s. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/** How often the owner renews and a standby looks at the lease, unless set: 5 s. */
export const DEFAULT_RENEW_INTERVAL_MS = 5_000;
/** The shortest renewal interval accepted. */
export const MIN_RENEW_INTERVAL_MS = MIN_LEASE_DURATION_MS / 2;

/** What `start` is given: this process's term as the owner. */
export interface OwnerTerm {
  /** The number of the lease object that began the term (grows with every takeover). */
  readonly leaseNumber: number;
  /** Aborted when the term ends: the lease was lost, released or the election stopped. */
  readonly signal: AbortSignal;
  /**
   * Ends the term from inside the work (for instance when the queue closed
   * on its own): the work is stopped, the lease released so a standby takes
   * over at once, and this process waits one lease duration before it
   * claims the lease again.
   */
  stepDown(reason?: unknown): void;
  /**
   * `store` with its writes refused (`FencedError`) once this term's lease
   * has run out by this process's clock or was lost, and once the term
   * ended (its work's `stop()` resolved, before the lease is released): give it to
   * `Queue.open` and `serveClients`. The engine's fence already refuses a
   * stale owner's commits; the guard also stops what follows commits made
   * before a pause (inbox answers, request deletions), so an owner that
   * wakes after losing its lease writes nothing at all. Reads pass through.
   */
  guard(store: ObjectStore): ObjectStore;
}

/** The owner's work, as `start` returns it. */
export interface OwnedWork {
  /** Stops the work; called once when the term ends, before the lease is released. */
  stop(): Promise<void>;
}

/** Options of `runOwnerElection`. */
export interface OwnerElectionOptions {
  /**
   * Starts the owner's work (open the queue, spawn the workers, serve the
   * clients) when this process wins the lease. A rejection is logged and
   * ends the term as `stepDown` does.
   */
  start(term: OwnerTerm): Promise<OwnedWork>;
  /**
   * How long a lease lasts after its last renewal (default 15 s): a standby
   * takes over a dead owner's store within this plus one renewal interval.
   * At most one hour, and at least twice `renewIntervalMs`.
   */
  leaseDurationMs?: number;
  /** How often the owner renews and standbys look (default 5 s; at least 50 ms). */
  renewIntervalMs?: number;
  /** This process's name in the lease (default `host:pid:random`); unique per process. */
  processId?: string;
  /** Default `SystemClock`. */
  clock?: Clock;
  /** Default: console at `warn`. */
  logger?: Logger;
  /** Called whenever this process becomes the owner or stops being it. */
  onChange?(state: OwnerElectionState): void;
}

/** Where a process stands in an election. */
export type OwnerElectionState = "standby" | "owner" | "stopped";

/** Extra behaviour of elections a shard coordinator runs (not public). */
export interface ElectionHooks {
  /**
   * Extra wait before claiming a lease that is free, decided when it becomes
   * free: `released` when its holder gave it up (rather than stopped renewing).
   */
  claimDelayMs?(released: boolean): number;
}

function checkMs(what: string, v: unknown, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new ValidationError(`${what} must be a whole number of milliseconds from ${min} to ${max}, got ${describeValue(v)}`);
  }
  return v;
}

const ELECTION_KEYS = optionFields<OwnerElectionOptions>({
  start: true,
  leaseDurationMs: true,
  renewIntervalMs: true,
  processId: true,
  clock: true,
  logger: true,
  onChange: true,
});

/**
 * The options of an election (`runOwnerElection`'s, or `runShardWorkers`'s,
 * named by `name`) read once and checked: each field is asked for once (a
 * getter that throws is refused by name), and the copy is what runs.
 */
export function readElectionOptions<O>(given: O, name: string): O {
  // runShardWorkers's options have the same fields (its start and onChange take a shard).
  const opts: Record<string, unknown> = readExactOptions(given, ELECTION_KEYS, name);
  if (typeof opts.start !== "function")
    throw new ValidationError(`${name}.start must be a function that starts the owner's work, got ${describeValue(opts.start)}`);
  checkOptionalFunction(`${name}.onChange`, opts.onChange);
  if (opts.clock !== undefined && !hasMethods(opts.clock, ["now"]))
    throw new ValidationError(`${name}.clock must be an object with a now() method (a Clock), got ${describeValue(opts.clock)}`);
  const logger = readLogger(`${name}.logger`, opts.logger);
  if (logger !== undefined) opts.logger = logger;
  if (opts.processId !== undefined && (typeof opts.processId !== "string" || opts.processId.length === 0 || opts.processId.length > 200))
    throw new ValidationError(`${name}.processId must be 1-200 characters, got ${describeValue(opts.processId)}`);
  electionTimings(opts as { leaseDurationMs?: number; renewIntervalMs?: number });
  return opts as O;
}

/** Checks the election timings and returns them with their defaults. */
export function electionTimings(opts: { leaseDurationMs?: number; renewIntervalMs?: number }): { leaseDurationMs: number; renewIntervalMs: number } {
  const renewIntervalMs = checkMs("renewIntervalMs", opts.renewIntervalMs ?? DEFAULT_RENEW_INTERVAL_MS, MIN_RENEW_INTERVAL_MS, MAX_LEASE_DURATION_MS / 2);
  const leaseDurationMs = checkMs("leaseDurationMs", opts.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS, 2 * MIN_RENEW_INTERVAL_MS, MAX_LEASE_DURATION_MS);
  if (leaseDurationMs < 2 * renewIntervalMs) {
    throw new ValidationError(
      `leaseDurationMs (${leaseDurationMs}) must be at least twice renewIntervalMs (${renewIntervalMs}), so that one late renewal does not lose the lease`,
    );
  }
  return { leaseDurationMs, renewIntervalMs };
}

/** A process id unique enough to tell processes apart in a lease: host, pid and a random tail. */
export function defaultProcessId(): string {
  return `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Runs an owner election over `store` for the queue store `name` (the name
 * given to `Queue.open`): the lease lives at `{name}/lease/`. Returns at
 * once; the election runs until `stop()`.
 *
 * @example
 * const election = runOwnerElection(store, "app", {
 *   start: async (term) => {
 *     const owner = await openOwner(store); // Queue.open, a runtime, serveClients
 *     owner.queue.onClosed((reason) => reason && term.stepDown(reason));
 *     return { stop: () => owner.stop() };
 *   },
 * });
 * process.on("SIGTERM", () => void election.stop()); // releases the lease at once
 */
export function runOwnerElection(store: ObjectStore, name: string, opts: OwnerElectionOptions): OwnerElection {
  if (typeof name !== "string" || name.length === 0)
    throw new ValidationError(`the store name of an owner election must be a non-empty string, got ${describeValue(name)}`);
  validateObjectKey(`${name}/lease`);
  const checked = readElectionOptions(opts, "OwnerElectionOptions");
  return ELECTION_GATE.build(() => new OwnerElection(store, `${name}/`, checked));
}

/** `new OwnerElection` is internal: use runOwnerElection(store, name, options) (see internal-construction.ts). */
export const ELECTION_GATE = new ConstructionGate("OwnerElection", "use runOwnerElection(store, name, options)");

/** One process's part in an owner election; see `runOwnerElection`. */
export class OwnerElection {
  readonly #store: ObjectStore;
  readonly #prefix: string;
  readonly #start: OwnerElectionOptions["start"];
  readonly #leaseMs: number;
  readonly #renewMs: number;
  readonly #clock: TimedClock;
  readonly #logger: FullLogger;
  readonly #onChange: ((s: OwnerElectionState) => void) | undefined;
  readonly #hooks: ElectionHooks;
  readonly #stopCtl = new AbortController();
  readonly #done: Promise<void>;
  #state: OwnerElectionState = "standby";
  #holdoffUntil = 0;
  #term: { stepDown(reason?: unknown): void } | undefined;
  /** The process that wrote this process's name into the lease. */
  readonly processId: string;

  /** @internal Use `runOwnerElection`. */
  constructor(store: ObjectStore, prefix: string, opts: OwnerElectionOptions, hooks: ElectionHooks = {}) {
    ELECTION_GATE.check();
    if (typeof opts?.start !== "function") throw new ValidationError("runOwnerElection needs a start function that starts the owner's work");
    const t = electionTimings(opts);
    this.#store = store;
    this.#prefix = prefix;
    this.#start = opts.start;
    this.#leaseMs = t.leaseDurationMs;
    this.#renewMs = t.renewIntervalMs;
    this.#clock = timedClock(opts.clock ?? SystemClock);
    this.#logger = fullLogger(opts.logger);
    this.#onChange = opts.onChange;
    this.#hooks = hooks;
    this.processId = opts.processId ?? defaultProcessId();
    if (typeof this.processId !== "string" || this.processId.length === 0 || this.processId.length > 200) {
      throw new ValidationError(`processId must be 1-200 characters, got ${describeValue(this.processId)}`);
    }
    this.#done = this.#run();
  }

  /** `"owner"` while this process holds the lease and runs the work, `"standby"` otherwise, `"stopped"` after `stop()`. */
  get state(): OwnerElectionState {
    return this.#state;
  }

  /** The key prefix of the lease objects. */
  get leasePrefix(): string {
    return `${this.#prefix}lease/`;
  }

  /**
   * Gives the lease up if this process holds it (the work is stopped and the
   * lease released) and keeps standing by, claiming again no sooner than one
   * lease duration from now unless `holdoffMs` says otherwise.
   */
  relinquish(holdoffMs = this.#leaseMs): void {
    this.#holdoffUntil = this.#clock.now() + holdoffMs;
    this.#term?.stepDown();
  }

  /**
   * Leaves the election: stops the work if this process owns the store,
   * releases the lease (a standby takes over at once, without waiting for
   * expiry) and resolves when both are done.
   */
  async stop(): Promise<void> {
    this.#stopCtl.abort();
    await this.#done;
  }

  #setState(s: OwnerElectionState): void {
    if (this.#state === s) return;
    this.#state = s;
    try {
      this.#onChange?.(s);
    } catch (err) {
      this.#logger.error({ err }, "an owner election's onChange callback threw");
    }
  }

  get #record(): Omit<LeaseRecord, "released"> {
    return { holder: this.processId, leaseDurationMs: this.#leaseMs, renewIntervalMs: this.#renewMs, writtenAt: this.#clock.now() };
  }

  get #fallback(): { leaseDurationMs: number; renewIntervalMs: number } {
    return { leaseDurationMs: this.#leaseMs, renewIntervalMs: this.#renewMs };
  }

  /** Waits until `at` on the clock; false when `signal` aborted first. */
  async #sleepUntil(at: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    try {
      await this.#clock.waitUntil(at, signal);
      return true;
    } catch {
      return false;
    }
  }

  async #run(): Promise<void> {
    const stop = this.#stopCtl.signal;
    while (!stop.aborted) {
      const claimed = await this.#standBy();
      if (claimed === undefined) break;
      if (stop.aborted) {
        // Stopped while the claim was in flight: hand the lease straight back.
        await this.#release(claimed.n + 1);
        break;
      }
      await this.#own(claimed.n, claimed.at);
    }
    this.#setState("stopped");
  }

  /** Watches the lease until this process claims it (its number and when the claim was sent) or the election stops. */
  async #standBy(): Promise<{ n: number; at: number } | undefined> {
    const stop = this.#stopCtl.signal;
    let seen: LeaseEntry | undefined;
    let observedAt = 0;
    let known = false;
    // The extra delay before claiming a free lease, decided when it was first seen free.
    let freeDelay: number | undefined;
    while (!stop.aborted) {
      try {
        if (!known) {
          seen = await readNewestLease(this.#store, this.#prefix, this.#fallback);
          observedAt = this.#clock.now();
          known = true;
          freeDelay = undefined;
        }
        const rec = seen?.record;
        if (rec !== undefined && rec.holder === this.processId && !rec.released) {
          // Our own lease, from a renewal that landed after we gave up on it: release it.
          const n = seen!.n + 1;
          if (await createLease(this.#store, this.#prefix, n, { ...this.#record, released: true })) {
            seen = { n, record: { ...this.#record, released: true } };
            observedAt = this.#clock.now();
          } else known = false;
          continue;
        }
        const released = seen === undefined || rec!.released;
        const freeAt = released ? observedAt : observedAt + rec!.leaseDurationMs;
        const now = this.#clock.now();
        const claimAt = now < freeAt ? freeAt : Math.max(freeAt + (freeDelay ??= this.#hooks.claimDelayMs?.(released) ?? 0), this.#holdoffUntil);
        if (now < claimAt) {
          // Look at the lease once per interval meanwhile: a renewal, or someone else's claim.
          if (!(await this.#sleepUntil(Math.min(claimAt, now + this.#renewMs), stop))) break;
          const newer = await this.#follow(seen);
          if (newer !== undefined) {
            seen = newer;
            observedAt = this.#clock.now();
            freeDelay = undefined;
          }
          continue;
        }
        const n = seen === undefined ? 0 : seen.n + 1;
        const at = this.#clock.now();
        if (await createLease(this.#store, this.#prefix, n, { ...this.#record, released: false })) {
          // Objects may have been deleted under a standby that slept, or a process paused between
          // its look and its put lands in a slot the holder already deleted: the chain then goes on
          // above it, and this claim is void.
          if (!(await newerLeaseExists(this.#store, this.#prefix, n))) return { n, at };
          this.#logger.warn({ lease: this.leasePrefix, leaseNumber: n }, "a claim of the owner lease landed below a newer lease object; standing by");
          await this.#store.delete(leaseKey(this.#prefix, n)).catch(() => undefined);
        }
        known = false; // lost the race: look again
      } catch (err) {
        this.#logger.warn({ err, lease: this.leasePrefix }, "reading the owner lease failed; trying again at the next interval");
        known = false;
        if (!(await this.#sleepUntil(this.#clock.now() + this.#renewMs, stop))) break;
      }
    }
    return undefined;
  }

  /**
   * The newest lease object after `seen`, found by reading the next numbers
   * one GET at a time (cheaper than a listing), or undefined when there is
   * none yet. Reading on past the first keeps a standby that fell behind the
   * holder's renewals in step with it.
   *
   * When the next number is missing it was either not written yet or
   * written and deleted: a takeover deletes every object below the one
   * before its own, and a renewal the one two back, so within one look the
   * chain can move past `seen` and delete the next number. A standby that
   * took that for "nothing new" would keep a view one term old: claim into
   * the deleted slot a lease duration after it last saw a change (a void
   * claim), and only then see the newest object and wait a whole lease
   * duration more. A holder deletes one object at a time, oldest first, so
   * `seen` still there (the same record) means the next number was never
   * written: one more GET. Only when `seen` is gone, or was rewritten after
   * a delete, does the look list the numbers above it.
   */
  async #follow(seen: LeaseEntry | undefined): Promise<LeaseEntry | undefined> {
    let newest: LeaseEntry | undefined;
    for (let n = seen === undefined ? 0 : seen.n + 1; ; n++) {
      const next = await readLease(this.#store, this.#prefix, n, this.#fallback);
      if (next === undefined) break;
      newest = next;
    }
    if (newest !== undefined) return newest;
    if (seen !== undefined && sameRecord((await readLease(this.#store, this.#prefix, seen.n, this.#fallback))?.record, seen.record)) return undefined;
    return readNewestLease(this.#store, this.#prefix, this.#fallback, seen?.n);
  }

  /** Holds the lease from object `n` (claimed at `claimedAt`), running the work, until the term ends. */
  async #own(n: number, claimedAt: number): Promise<void> {
    const stop = this.#stopCtl.signal;
    const termCtl = new AbortController();
    const onStop = () => termCtl.abort();
    stop.addEventListener("abort", onStop, { once: true });
    let steppedDown = false;
    const stepDown = (reason?: unknown) => {
      if (termCtl.signal.aborted) return;
      steppedDown = true;
      if (reason !== undefined) this.#logger.warn({ err: reason, lease: this.leasePrefix }, "the owner's work ended; releasing the lease");
      termCtl.abort();
    };
    const lease: TermLease = { deadline: claimedAt + this.#leaseMs, lost: false, ended: false, inflight: 0, drained: [] };
    const term: OwnerTerm = { leaseNumber: n, signal: termCtl.signal, stepDown, guard: (store) => guardWrites(store, this.#clock, lease, this.leasePrefix) };
    this.#term = term;
    this.#setState("owner");
    this.#logger.info({ lease: this.leasePrefix, leaseNumber: n, processId: this.processId }, "this process owns the store");

    const started = this.#startWork(term);
    // The former holders' objects: all but the one just before ours (a standby may be reading it).
    // Deletes run one at a time, oldest first, which a standby's look relies on (see #follow): each
    // waits for the one before, and after a failure the next renewal lists and deletes from the oldest.
    // Through the term's guard: a term resumed from a pause past its lease (SIGSTOP) sends no delete it had queued.
    const tidyStore = guardWrites(this.#store, this.#clock, lease, this.leasePrefix);
    let tidy = this.#deleteBelow(tidyStore, n - 1);
    let current = n;
    let nextRenewal = claimedAt + this.#renewMs;
    let lost = false;
    while (!termCtl.signal.aborted) {
      if (!(await this.#sleepUntil(Math.min(nextRenewal, lease.deadline), termCtl.signal))) break;
      const sentAt = this.#clock.now();
      if (sentAt >= lease.deadline) {
        lost = true;
        this.#logger.warn({ lease: this.leasePrefix }, "the owner lease expired before a renewal succeeded; stopping the owner's work");
        break;
      }
      let renewed: boolean | "late";
      try {
        renewed = await this.#beforeDeadline(this.#renew(current, lease.deadline), lease.deadline);
      } catch (err) {
        this.#logger.warn({ err, lease: this.leasePrefix }, "renewing the owner lease failed; trying again");
        nextRenewal = this.#clock.now() + Math.max(MIN_RENEW_INTERVAL_MS, Math.floor(this.#renewMs / 4));
        continue;
      }
      if (renewed === "late") continue; // the deadline check above ends the term
      if (!renewed) {
        lost = true;
        this.#logger.warn({ lease: this.leasePrefix }, "another process took the owner lease; stopping the owner's work");
        break;
      }
      current += 1;
      lease.deadline = sentAt + this.#leaseMs;
      nextRenewal = sentAt + this.#renewMs;
      if (sentAt < claimedAt + this.#leaseMs + this.#renewMs && (await this.#chainAbove(current))) {
        lost = true;
        this.#logger.warn(
          { lease: this.leasePrefix, leaseNumber: current },
          "another process renews the owner lease above this one's (lease objects were deleted under it); stopping the owner's work",
        );
        break;
      }
      // Keep the previous object (a standby may be reading it); older ones go.
      const old = current - 2;
      if (old >= 0)
        tidy = tidy.then((done) =>
          done
            ? tidyStore.delete(leaseKey(this.#prefix, old)).then(
                () => true,
                () => false,
              )
            : this.#deleteBelow(tidyStore, old + 1),
        );
    }
    if (lost) lease.lost = true;
    termCtl.abort();
    stop.removeEventListener("abort", onStop);
    const work = await started;
    if (work !== undefined) {
      try {
        await work.stop();
      } catch (err) {
        this.#logger.error({ err, lease: this.leasePrefix }, "stopping the owner's work failed");
      }
    }
    this.#term = undefined;
    // The work has stopped: nothing of this term writes any more, whatever the lease's deadline. A write made
    // after this (a straggler of the work) could otherwise land beside the next owner's once the release is out.
    lease.ended = true;
    if (steppedDown && this.#holdoffUntil < this.#clock.now()) this.#holdoffUntil = this.#clock.now() + this.#leaseMs;
    // A write the guard passed before the end may still be in flight (work that did not wait for it): released
    // now, the next owner could write the same key before it lands. Wait for it, but not past the deadline.
    const settled = lost ? true : await this.#beforeDeadline(writesSettled(lease), lease.deadline);
    if (settled === "late")
      this.#logger.warn({ lease: this.leasePrefix }, "a write of the ended owner term was still in flight at its lease's end; not releasing the lease");
    // Graceful: release so a standby follows at once. Not once the lease ran out (a term that
    // wakes from a pause and steps down): the next number may be a slot the new owner has since
    // deleted, and a release written there would be a stale object in the chain.
    if (!lost && settled !== "late" && this.#clock.now() < lease.deadline) await this.#release(current + 1);
    this.#setState(stop.aborted ? "stopped" : "standby");
  }

  /**
   * Creates lease object `current + 1`; false when it is taken, or when
   * object `current` is gone and objects exist above it. Only a holder
   * above deletes this term's newest object: one that claimed above the
   * chain without meeting it (over a stray object far above, say) and
   * deleted the objects below its own. Gone with nothing above (the folder
   * emptied by a clean-up) the term goes on. One GET per renewal.
   *
   * "late", sending nothing, when the lease ran out while the GET was
   * answered (a process paused between the two): a new owner may have
   * renewed past `current + 1` and deleted it, and the put would land there
   * as a stale object written after this term lost the store.
   */
  async #renew(current: number, deadline: number): Promise<boolean | "late"> {
    const gone = (await this.#store.get(leaseKey(this.#prefix, current))) === null;
    if (this.#clock.now() >= deadline) return "late";
    if (gone && (await newerLeaseExists(this.#store, this.#prefix, current))) return false;
    if (this.#clock.now() >= deadline) return "late";
    return createLease(this.#store, this.#prefix, current + 1, { ...this.#record, released: false });
  }

  /**
   * Whether lease objects exist above `n`, looked at in a term's first lease
   * duration. A claim made while objects were missing (deleted under a live
   * holder, say by a clean-up of the folder) starts a chain below the
   * holder's, where no renewal of either ever collides; the live holder
   * renews above it within a lease duration, and this shows it. A failed
   * listing counts as no: the next renewal looks again.
   */
  async #chainAbove(n: number): Promise<boolean> {
    try {
      return await newerLeaseExists(this.#store, this.#prefix, n);
    } catch {
      return false;
    }
  }

  /** Deletes the lease objects below `below`, oldest first; false when a request failed (some may be left). */
  async #deleteBelow(store: ObjectStore, below: number): Promise<boolean> {
    try {
      await deleteLeasesBelow(store, this.#prefix, below);
      return true;
    } catch (err) {
      this.#logger.warn({ err, lease: this.leasePrefix }, "deleting old owner lease objects failed; trying again at the next renewal");
      return false;
    }
  }

  /** Writes lease object `n` marked released. */
  async #release(n: number): Promise<void> {
    try {
      await createLease(this.#store, this.#prefix, n, { ...this.#record, released: true });
    } catch (err) {
      this.#logger.warn({ err, lease: this.leasePrefix }, "releasing the owner lease failed; standbys take over when it expires");
    }
  }

  async #startWork(term: OwnerTerm): Promise<OwnedWork | undefined> {
    try {
      const work = await this.#start(term);
      if (typeof work?.stop !== "function") throw new ValidationError("an owner election's start function must resolve to an object with a stop() method");
      return work;
    } catch (err) {
      this.#logger.error({ err, lease: this.leasePrefix }, "starting the owner's work failed; releasing the lease");
      term.stepDown();
      return undefined;
    }
  }

  /**
   * `op`'s result, or "late" when the clock reaches `deadline` first. A
   * result handled at or past `deadline` is "late" too: a process resumed
   * from a pause handles the answers that came meanwhile before its overdue
   * timers, and a renewal that landed after the lease ran out may sit in a
   * slot a new owner had already renewed past and deleted; counting it
   * would reopen the term's guard while the new owner runs.
   */
  async #beforeDeadline<T>(op: Promise<T>, deadline: number): Promise<T | "late"> {
    const timer = new AbortController();
    try {
      const out = await Promise.race([op, this.#clock.waitUntil(deadline, timer.signal).then(() => "late" as const)]);
      return this.#clock.now() >= deadline ? "late" : out;
    } finally {
      timer.abort();
      op.catch(() => undefined);
    }
  }
}

/** Whether `a` is the record `b` (an object rewritten in a freed slot is another record). */
function sameRecord(a: LeaseRecord | undefined, b: LeaseRecord): boolean {
  return a !== undefined && a.holder === b.holder && a.released === b.released && a.writtenAt === b.writtenAt;
}

/** What a term's guard looks at: when its lease runs out, and whether the term ended before that. */
interface TermLease {
  deadline: number;
  /** Another process took the lease, or it ran out before a renewal succeeded. */
  lost: boolean;
  /** The term's work stopped (a graceful end): from here on the lease is released or about to be. */
  ended: boolean;
  /** Writes the term's guards passed that have not settled yet. */
  inflight: number;
  /** Called once `inflight` falls to 0. */
  drained: Array<() => void>;
}

/** Runs `write`, a write a guard of `lease` passed, counted in flight until it settles. */
function counted<T>(lease: TermLease, write: () => Promise<T>): Promise<T> {
  lease.inflight++;
  const done = () => {
    if (--lease.inflight > 0) return;
    const waiting = lease.drained;
    lease.drained = [];
    for (const wake of waiting) wake();
  };
  let p: Promise<T>;
  try {
    p = write();
  } catch (err) {
    done();
    return Promise.reject(err);
  }
  return Promise.resolve(p).finally(done);
}

/** Resolves once no write a guard of `lease` passed is in flight. */
function writesSettled(lease: TermLease): Promise<void> {
  return lease.inflight === 0 ? Promise.resolve() : new Promise<void>((r) => lease.drained.push(r));
}

/** `store` refusing writes once `lease` ran out, was lost or its term ended (see `OwnerTerm.guard`). */
function guardWrites(store: ObjectStore, clock: Clock, lease: TermLease, what: string): ObjectStore {
  const check = (key: string) => {
    if (lease.ended && !lease.lost) {
      throw new FencedError(
        `the owner term of ${what} ended (its work stopped and the lease was released) before the write of "${key}"; another process may own the store now: stop this term's work before its stop() resolves`,
      );
    }
    if (lease.lost || clock.now() >= lease.deadline) {
      throw new FencedError(`the owner lease ${what} ran out before the write of "${key}"; another process may own the store now`);
    }
  };
  const guarded: ObjectStore = {
    get: (key) => store.get(key),
    ...(store.getBorrowed === undefined ? {} : { getBorrowed: (key: string) => store.getBorrowed!(key) }),
    ...(store.getRange === undefined ? {} : { getRange: (key: string, offset: number, length: number) => store.getRange!(key, offset, length) }),
    ...(store.getRangeInto === undefined ? {} : { getRangeInto: (key: string, offset: number, into: Uint8Array) => store.getRangeInto!(key, offset, into) }),
    list: (prefix, opts) => store.list(prefix, opts),
    async put(key, body, opts) {
      check(key);
      return counted(lease, () => store.put(key, body, opts));
    },
    async delete(key) {
      check(key);
      return counted(lease, () => store.delete(key));
    },
    ...(store.removeLeftovers === undefined
      ? {}
      : {
          removeLeftovers: async (prefix: string) => {
            check(prefix);
            return counted(lease, () => store.removeLeftovers!(prefix));
          },
        }),
  };
  // Reads pass through unchanged: the inbox and clients can follow changes of the store underneath.
  watchThrough(guarded, store);
  // Puts go straight to `store` after a check in the caller's turn: an engine over the guard writes as over it.
  passPutMarks(store, guarded);
  return guarded;
}
