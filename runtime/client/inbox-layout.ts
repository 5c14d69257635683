/**
 * @module Where the client inbox lives: object keys of requests, answers
 * and dead-lettered requests, and the caller KV key of applied marks.
 *
 * Objects, under the queue store's own prefix `{name}/` (beside the
 * engine's `db/` and the offloaded `payloads/`), per step queue `{q}`:
 * - `inbox/{q}/requests/{requestId}`: one request, created put-if-absent;
 * - `inbox/{q}/answers/{requestId}`: the owner's answer, read and removed by the client;
 * - `inbox/{q}/dead/{requestId}`: a request the owner could not read, with the reason;
 * - `inbox/{q}/requests/~keep`, `inbox/{q}/answers/~keep`: written when an
 *   owner starts serving, so that on a local directory the folders stay in
 *   place (a store removes emptied folders) and a watch on them does not
 *   rescan a new folder for every request.
 * KV: `workflow/inbox-applied/{q}/{requestId}`: the answer of an applied
 * request, committed with the request's effect (see `applied-mark`).
 *
 * Request ids are ULIDs: time-ordered, so a listing returns requests in
 * submission order (by the client's clock) and old marks are found by id.
 */
import { createHash } from "node:crypto";
import { decodeTime, encodeTime, TIME_MAX } from "ulid";
import { pooledUlids } from "../queue/ulid-source.js";
import { RESERVED_KV_PREFIX } from "../workflow/records/reserved.js";

export const inboxPrefix = (q: string): string => `inbox/${q}/`;
export const requestsPrefix = (q: string): string => `${inboxPrefix(q)}requests/`;
export const answersPrefix = (q: string): string => `${inboxPrefix(q)}answers/`;
export const deadPrefix = (q: string): string => `${inboxPrefix(q)}dead/`;
/** The name of the placeholder objects that keep the inbox folders in place. */
export const KEEP_NAME = "~keep";
export const keepKeys = (q: string): string[] => [`${requestsPrefix(q)}${KEEP_NAME}`, `${answersPrefix(q)}${KEEP_NAME}`];
export const requestKey = (q: string, id: string): string => `${requestsPrefix(q)}${id}`;
export const answerKey = (q: string, id: string): string => `${answersPrefix(q)}${id}`;
export const deadKey = (q: string, id: string): string => `${deadPrefix(q)}${id}`;

export const appliedPrefix = (q: string): string => `${RESERVED_KV_PREFIX}inbox-applied/${q}/`;
export const appliedKey = (q: string, id: string): string => `${appliedPrefix(q)}${id}`;

const REQUEST_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** Whether `id` is a request id (a ULID). */
export function isRequestId(id: string): boolean {
  return REQUEST_ID.test(id);
}

/** When request `id` was made (ms), from its ULID time. */
export function requestTime(id: string): number {
  return decodeTime(id);
}

/** A generator of increasing request ids for one client. */
export function requestIds(): (now: number) => string {
  const next = pooledUlids();
  return (now) => next(now);
}

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * The one request id of a request that is pending at most once: the ULID
 * of `timeMs` whose random part is a hash of `key`. A client that posts it
 * again while the first is still in the inbox finds its object there and
 * writes nothing (see `TaqubaClient`'s create-if-absent put). Undefined
 * for a time a ULID cannot hold (a damaged record): then post as usual.
 */
export function onceRequestId(timeMs: number, key: string): string | undefined {
  if (!Number.isSafeInteger(timeMs) || timeMs < 0 || timeMs > TIME_MAX) return undefined;
  const hash = createHash("sha256").update(key).digest();
  let tail = "";
  // 16 characters of 5 bits: the first 80 bits of the hash.
  for (let i = 0; i < 16; i++) {
    const bit = i * 5;
    const byte = bit >> 3;
    const word = (hash[byte]! << 8) | hash[byte + 1]!;
    tail += CROCKFORD[(word >> (11 - (bit & 7))) & 31];
  }
  return encodeTime(timeMs, 10) + tail;
}
