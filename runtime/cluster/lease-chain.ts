/**
 * @module The owner lease as a chain of numbered objects.
 *
 * The store offers only create-if-absent puts, so the lease is not one
 * object rewritten in place but a chain: `{prefix}lease/{n}` (n zero-padded
 * to 20 digits). Whoever creates object n+1 holds the lease after object n:
 * the holder renews by creating n+1 with its own name, a standby takes over
 * by creating n+1 with its name once n has stayed the newest object for a
 * whole lease duration, and exactly one of two racing creators wins. A
 * graceful holder creates n+1 marked released, which a standby may follow
 * at once. The holder deletes objects older than its previous one: on each
 * renewal the one before that, and when it takes over every older object
 * it lists (a former holder's, or one a paused process created late in a
 * slot already deleted), so the folder holds a handful of objects however
 * many takeovers there were. The newest object is never deleted: only a
 * holder of object c deletes, and only below c - 1. It deletes one object
 * at a time, oldest first, so an object still there means no later number
 * was deleted: a standby checks the object it saw last with one GET before
 * it lists.
 *
 * Nothing here compares clocks of two machines: a standby measures a lease
 * duration on its own clock from when it first saw object n.
 */
import { PreconditionFailedError, ValidationError } from "../errors.js";
import type { ObjectStore } from "../store/object-store.js";

/** What each lease object holds. */
export interface LeaseRecord {
  /** The process that wrote it (see `OwnerElectionOptions.processId`). */
  readonly holder: string;
  /** Whether the holder gave the lease up (a graceful shutdown). */
  readonly released: boolean;
  /** The lease duration the holder runs with: how long standbys wait after this object. */
  readonly leaseDurationMs: number;
  /** How often the holder renews. */
  readonly renewIntervalMs: number;
  /** The holder's clock when it wrote the object (for display; never compared across machines). */
  readonly writtenAt: number;
}

/** A lease object as read: its number and record. */
export interface LeaseEntry {
  readonly n: number;
  readonly record: LeaseRecord;
}

const PAD = 20;
const FORMAT = 1;

/** The folder of lease objects under `prefix` ("" or ending in "/"). */
export const leaseFolder = (prefix: string): string => `${prefix}lease/`;

/** The key of lease object `n`. */
export function leaseKey(prefix: string, n: number): string {
  return `${leaseFolder(prefix)}${String(n).padStart(PAD, "0")}`;
}

/** The number of a lease key, or undefined when `key` is not one. */
export function parseLeaseKey(prefix: string, key: string): number | undefined {
  const head = leaseFolder(prefix);
  if (!key.startsWith(head)) return undefined;
  const tail = key.slice(head.length);
  if (tail.length !== PAD || !/^[0-9]+$/.test(tail)) return undefined;
  // Past 2^53 the number is not the name's (its key differs): a stray object, which a reader would look for in vain, for ever.
  const n = Number(tail);
  return Number.isSafeInteger(n) ? n : undefined;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodeLeaseRecord(r: LeaseRecord): Uint8Array {
  return enc.encode(JSON.stringify({ v: FORMAT, ...r }));
}

/**
 * Reads a lease object's bytes. An object that is not a lease record (a
 * stray or damaged file) counts as held by an unknown process for
 * `fallback.leaseDurationMs`: it delays a takeover by one lease duration,
 * never makes two owners.
 */
export function decodeLeaseRecord(body: Uint8Array, fallback: { leaseDurationMs: number; renewIntervalMs: number }): LeaseRecord {
  try {
    const o = JSON.parse(dec.decode(body)) as Record<string, unknown>;
    const ms = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v > 0;
    if (o.v === FORMAT && typeof o.holder === "string" && typeof o.released === "boolean" && ms(o.leaseDurationMs) && ms(o.renewIntervalMs)) {
      return {
        holder: o.holder,
        released: o.released,
        // A holder cannot make standbys wait longer than an hour, nor (a damaged record) shorter than any holder's lease can be.
        leaseDurationMs: Math.max(MIN_LEASE_DURATION_MS, Math.min(o.leaseDurationMs, MAX_LEASE_DURATION_MS)),
        renewIntervalMs: o.renewIntervalMs,
        writtenAt: typeof o.writtenAt === "number" ? o.writtenAt : 0,
      };
    }
  } catch {
    // falls through to the unknown holder
  }
  return { holder: "(unreadable lease object)", released: false, ...fallback, writtenAt: 0 };
}

export const MAX_LEASE_DURATION_MS = 3_600_000;
/** The shortest lease an election runs with (twice its shortest renewal interval). */
export const MIN_LEASE_DURATION_MS = 100;

/** The newest lease object under `prefix`, optionally only among those after `after`; undefined when there is none. */
export async function readNewestLease(
  store: ObjectStore,
  prefix: string,
  fallback: { leaseDurationMs: number; renewIntervalMs: number },
  after?: number,
): Promise<LeaseEntry | undefined> {
  let newest: number | undefined;
  const opts = after === undefined ? {} : { startAfter: leaseKey(prefix, after) };
  for await (const o of store.list(leaseFolder(prefix), opts)) {
    const n = parseLeaseKey(prefix, o.key);
    // By number, not by where the listing started: a store may list from the start whatever it was asked.
    if (n !== undefined && (after === undefined || n > after) && (newest === undefined || n > newest)) newest = n;
  }
  if (newest === undefined) return undefined;
  const got = await store.get(leaseKey(prefix, newest));
  // Deleted between the listing and the read: only the holder deletes, and only old objects, so list again.
  if (got === null) return readNewestLease(store, prefix, fallback, after);
  return { n: newest, record: decodeLeaseRecord(got.body, fallback) };
}

/** Lease object `n`, or undefined when it does not exist (yet, or any more). */
export async function readLease(
  store: ObjectStore,
  prefix: string,
  n: number,
  fallback: { leaseDurationMs: number; renewIntervalMs: number },
): Promise<LeaseEntry | undefined> {
  const got = await store.get(leaseKey(prefix, n));
  return got === null ? undefined : { n, record: decodeLeaseRecord(got.body, fallback) };
}

/**
 * Creates lease object `n`; false when another process created it first.
 * An object already there with this holder and release flag is this
 * process's own earlier attempt (a put that landed but answered with an
 * error, then retried), so it counts as created.
 */
export async function createLease(store: ObjectStore, prefix: string, n: number, record: LeaseRecord): Promise<boolean> {
  if (!Number.isSafeInteger(n) || n < 0) throw new ValidationError(`lease number ${n} is not a non-negative safe integer`);
  try {
    await store.put(leaseKey(prefix, n), encodeLeaseRecord(record), { ifNoneMatch: "*" });
    return true;
  } catch (err) {
    if (!(err instanceof PreconditionFailedError)) throw err;
    const there = await readLease(store, prefix, n, { leaseDurationMs: record.leaseDurationMs, renewIntervalMs: record.renewIntervalMs });
    return there !== undefined && there.record.holder === record.holder && there.record.released === record.released;
  }
}

/**
 * Whether a lease object after `n` exists (one listing). Numbers are
 * compared, not taken from where the listing started: a store that lists
 * from the start whatever it was asked shows object `n` itself, which read
 * as newer voided every claim and ended every term at its first look.
 */
export async function newerLeaseExists(store: ObjectStore, prefix: string, n: number): Promise<boolean> {
  for await (const o of store.list(leaseFolder(prefix), { startAfter: leaseKey(prefix, n) })) {
    const listed = parseLeaseKey(prefix, o.key);
    if (listed !== undefined && listed > n) return true;
  }
  return false;
}

/**
 * Deletes every lease object numbered below `below`; returns how many. Only
 * the holder of object `below + 1` calls it, so the newest object (at least
 * `below + 1`) and the one before stay. A crash part way leaves old objects
 * the next holder deletes.
 */
export async function deleteLeasesBelow(store: ObjectStore, prefix: string, below: number): Promise<number> {
  const old: number[] = [];
  for await (const o of store.list(leaseFolder(prefix))) {
    const n = parseLeaseKey(prefix, o.key);
    if (n === undefined) continue;
    if (n >= below) break; // listed in ascending order
    old.push(n);
  }
  for (const n of old) await store.delete(leaseKey(prefix, n));
  return old.length;
}
