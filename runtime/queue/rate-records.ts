/**
 * @module Durable rate windows: what a reader in another process needs to
 * tell that a rate limit holds a job back, and what a restarted owner
 * needs to keep counting recent claims. Written in the claim commit that
 * already happens (no commit of its own), only for claims a rate limit
 * counts; a queue without one writes nothing here.
 *
 * | key | value |
 * |---|---|
 * | `w/<queue>/q<key>` | the window of a key of the queue's own rate limit |
 * | `w/<queue>/r<JSON [rule, key]>` | the window of a key of a flow rule's rate limit |
 * | `l/<queue>` | the queue's own rate limit (limit, period, key template), so a reader can build a job's key |
 *
 * A window holds the limit and period it counts for, `until` (when the
 * next claim of the key is allowed, as of the last claim: exact, as no
 * claim of the key happens before it), and the last claim times, at most
 * `RATE_TIMES_KEPT` (what a restarted owner seeds its window from;
 * stored as the first and the distances between them, negative if the clock went back), and how
 * many claims the window counted when it counted more than it keeps times
 * for (a restarted owner counts those as made at the oldest time kept: no
 * later than they were, so never more claims than the limit). The
 * maintenance sweep deletes a window once its last claim left the period
 * (see `windowExpired`), and a damaged one once it held its key one period.
 */
import { bytesEqual } from "../store/bytes-equal.js";
import { applied, type Limits, type RateWindows, type ResolvedRateLimit } from "./admission.js";
import type { ReadSource, Txn } from "./txn.js";
import { ownedBytes } from "./owned-bytes.js";
import { ownFieldsIfPolluted } from "../own-fields.js";

/** Claim times a window record keeps: bounds its size for large limits. */
export const RATE_TIMES_KEPT = 32;

export const RATE_WINDOW = "w/";
export const RATE_CONFIG = "l/";

const enc = new TextEncoder();
const dec = new TextDecoder();

export const rateWindowPrefix = (queue: string) => `${RATE_WINDOW}${queue}/`;
export const rateWindowKey = (queue: string, key: string, rule?: string) =>
  rule === undefined ? `${RATE_WINDOW}${queue}/q${key}` : `${RATE_WINDOW}${queue}/r${JSON.stringify([rule, key])}`;
export const rateConfigKey = (queue: string) => `${RATE_CONFIG}${queue}`;

/** One key's window as stored. */
export interface RateWindowRecord {
  readonly limit: number;
  readonly periodMs: number;
  /** When the next claim of the key is allowed, as of its last claim. */
  readonly until: number;
  /** The last claim times, oldest first, at most `RATE_TIMES_KEPT`. */
  readonly times: readonly number[];
  /** The claims the window counted, at least `times.length`: more when older times were not kept. */
  readonly count: number;
}

/** The queue's own rate limit as stored for readers. */
export interface RateConfigRecord {
  readonly limit: number;
  readonly periodMs: number;
  readonly key: string | undefined;
}

const isTime = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/** The fields of a window record and of a rate limit record their encodings may leave out. */
const WINDOW_OPTIONAL: readonly string[] = ["c"];
const CONFIG_OPTIONAL: readonly string[] = ["k"];

/** Decodes a window record; undefined for damaged bytes (a reader then shows no reason rather than a wrong one). */
export function decodeRateWindow(bytes: Uint8Array): RateWindowRecord | undefined {
  try {
    const v = JSON.parse(dec.decode(bytes)) as { l?: unknown; p?: unknown; u?: unknown; t?: unknown; c?: unknown };
    // Its count is left out by older writers: one Object.prototype holds is not the window's.
    if (v !== null && typeof v === "object") ownFieldsIfPolluted(v, WINDOW_OPTIONAL);
    if (!isTime(v.l) || v.l < 1 || !isTime(v.p) || v.p < 1 || !isTime(v.u) || !Array.isArray(v.t) || !v.t.every(Number.isSafeInteger)) return undefined;
    // A record written before counts were kept has none: it counted the times it keeps.
    const count = v.c === undefined ? v.t.length : v.c;
    if (!isTime(count) || count < v.t.length || count > v.l || (count > v.t.length && v.t.length === 0)) return undefined;
    // Stored as the first time, then each time's distance from the one before.
    const times: number[] = [];
    for (const d of v.t as number[]) times.push(times.length === 0 ? d : times[times.length - 1]! + d);
    if (!times.every(isTime)) return undefined;
    return { limit: v.l, periodMs: v.p, until: v.u, times, count };
  } catch {
    return undefined;
  }
}

/** Decodes the queue's rate limit record; undefined for damaged bytes. */
export function decodeRateConfig(bytes: Uint8Array): RateConfigRecord | undefined {
  try {
    const v = JSON.parse(dec.decode(bytes)) as { l?: unknown; p?: unknown; k?: unknown };
    // A limit without a key leaves it out: one Object.prototype holds is not the limit's.
    if (v !== null && typeof v === "object") ownFieldsIfPolluted(v, CONFIG_OPTIONAL);
    if (!isTime(v.l) || v.l < 1 || !isTime(v.p) || v.p < 1 || (v.k !== undefined && typeof v.k !== "string")) return undefined;
    return { limit: v.l, periodMs: v.p, key: v.k };
  } catch {
    return undefined;
  }
}

function encodeConfig(rate: ResolvedRateLimit): Uint8Array {
  return enc.encode(JSON.stringify(rate.key === undefined ? { l: rate.limit, p: rate.periodMs } : { l: rate.limit, p: rate.periodMs, k: rate.key }));
}

/**
 * Stages, on the claim's transaction, the windows of the rate limits that
 * counted the claim just admitted (after `admit` took it): nothing when no
 * rate limit applies.
 */
export function recordRateClaim(txn: Txn, windows: RateWindows, limits: Limits, headers: Readonly<Record<string, string>> | undefined, now: number): void {
  if (!mayRateLimit(limits)) return;
  for (const a of applied(limits, headers)) {
    if (a.rate === undefined) continue;
    // First, as it drops the claims that left the period: the times are then those the window counts.
    const until = windows.allowedAt(a.slot, a.rate, now);
    const times = windows.times(a.slot);
    const kept = times.slice(Math.max(0, times.length - RATE_TIMES_KEPT));
    const t = kept.map((x, i) => (i === 0 ? x : x - kept[i - 1]!));
    const record =
      times.length > kept.length ? { l: a.rate.limit, p: a.rate.periodMs, u: until, t, c: times.length } : { l: a.rate.limit, p: a.rate.periodMs, u: until, t };
    txn.put(rateWindowKey(limits.queue, a.key, a.rule), ownedBytes(enc.encode(JSON.stringify(record))));
  }
}

/** Whether any rate limit could apply to a job under `limits`: claims on a queue without one skip the window work. */
function mayRateLimit(limits: Limits): boolean {
  return limits.rateLimit !== undefined || (limits.rules !== undefined && limits.rules.size > 0);
}

/**
 * Keeps `l/<queue>` equal to the queue's own rate limit: written when it
 * differs (the first claim after a change), deleted when the queue has
 * none. A read of an in-memory value per claim batch; no write otherwise.
 */
export function recordRateConfig(txn: Txn, queue: string, rate: ResolvedRateLimit | undefined): void {
  const key = rateConfigKey(queue);
  const stored = txn.get(key);
  if (rate === undefined) {
    if (stored !== undefined) txn.delete(key);
    return;
  }
  const bytes = encodeConfig(rate);
  if (stored === undefined || !bytesEqual(stored, bytes)) txn.put(key, ownedBytes(bytes));
}

/**
 * Seeds the in-memory windows of the rate limits that apply to a job from
 * their durable records, for keys this process has not counted yet (after
 * a restart, recent claims of the previous owner still count).
 */
export function seedRateWindows(
  src: Pick<ReadSource, "get">,
  windows: RateWindows,
  limits: Limits,
  headers: Readonly<Record<string, string>> | undefined,
  now: number,
): void {
  if (!mayRateLimit(limits)) return;
  for (const a of applied(limits, headers)) {
    if (a.rate === undefined || windows.has(a.slot)) continue;
    const bytes = src.get(rateWindowKey(limits.queue, a.key, a.rule));
    if (bytes === undefined) continue;
    const w = decodeRateWindow(bytes);
    // A damaged window cannot say how many claims it counted: hold the key one full period rather than risk passing the limit.
    if (w === undefined) {
      windows.seed(a.slot, a.rate, [], now + a.rate.periodMs, now);
      continue;
    }
    // Claims counted but not kept happened before the oldest kept time: counted as made then, they free no earlier than they would.
    const times = w.count > w.times.length ? [...new Array<number>(w.count - w.times.length).fill(w.times[0]!), ...w.times] : w.times;
    // The claims count under any limit (one lowered at a restart included); when the window was full is the old limit's to say.
    const same = w.limit === a.rate.limit && w.periodMs === a.rate.periodMs;
    windows.seed(a.slot, a.rate, times, same ? w.until : 0, now);
  }
}

/** Why a rate limit holds a job back as of `now`, read from the durable windows (a reader in another process). */
export function durableRateReason(
  src: Pick<ReadSource, "get">,
  queue: string,
  key: string,
  rule: string | undefined,
  now: number,
): { limit: number; periodMs: number; until: number } | undefined {
  const bytes = src.get(rateWindowKey(queue, key, rule));
  const w = bytes === undefined ? undefined : decodeRateWindow(bytes);
  if (w === undefined || w.until <= now) return undefined;
  // A window written before the clock went back holds its key one period at most (as the owner counts it).
  return { limit: w.limit, periodMs: w.periodMs, until: Math.min(w.until, now + w.periodMs) };
}

/** The queue, flow rule (undefined: the queue's own rate limit) and rate key a window record's key names; undefined for a key of no window. */
export function parseRateWindowKey(k: string): { queue: string; rule: string | undefined; key: string } | undefined {
  if (!k.startsWith(RATE_WINDOW)) return undefined;
  // Queue names hold no "/" (names.ts).
  const slash = k.indexOf("/", RATE_WINDOW.length);
  if (slash < 0) return undefined;
  const queue = k.slice(RATE_WINDOW.length, slash);
  // charAt: "" past the end, where an index would read a value Object.prototype holds.
  const kind = k.charAt(slash + 1);
  if (kind === "q") return { queue, rule: undefined, key: k.slice(slash + 2) };
  if (kind !== "r") return undefined;
  try {
    const v: unknown = JSON.parse(k.slice(slash + 2));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string") return { queue, rule: v[0], key: v[1] };
  } catch {
    // Not a window key this version writes.
  }
  return undefined;
}

/**
 * Whether a window's last claim left its period by `now`: the sweep deletes
 * it then. The period is the larger of the stored one and `configuredMs`
 * (the period its rate limit has now, if any): a period raised at a restart
 * still counts the claims of a window stored under the shorter one.
 */
export function windowExpired(w: RateWindowRecord, now: number, configuredMs = 0): boolean {
  const last = w.times.length === 0 ? 0 : w.times[w.times.length - 1]!;
  return last + Math.max(w.periodMs, configuredMs) <= now && w.until <= now;
}
