/**
 * @module Why a pending job waits, as a reader in another process can tell
 * from durable state alone: its flow rule's concurrency key is full when
 * the jobs claimed under the same rule and key number at least the limit
 * its `FLOW_CONCURRENCY_LIMIT_HEADER` carries. The owner's own answer
 * (`heldBack`) reads its in-memory slots; this one counts claimed records,
 * which commit with the claims they describe, so it needs no write of its
 * own. A rate limit, the rule's or the queue's own, holds it back when the
 * durable window of its key (`rate-records`, written with the claims) says
 * the next claim is allowed only later. Pure over a read source.
 */
import {
  FLOW_CONCURRENCY_KEY_HEADER,
  FLOW_CONCURRENCY_LIMIT_HEADER,
  FLOW_RATE_KEY_HEADER,
  FLOW_RULE_HEADER,
  resolveRateLimit,
  type ResolvedRateLimit,
} from "./admission.js";
import { decodeRateConfig, durableRateReason, rateConfigKey } from "./rate-records.js";
import { claimedPrefix, jobKey } from "./keys.js";
import { decodeJob, type JobRecord } from "./record.js";
import type { ReadSource } from "./txn.js";
import type { WaitingReason } from "./types.js";

/** Claimed jobs per flow rule and concurrency key of one queue. */
export type ClaimedCounts = ReadonlyMap<string, number>;

const slotOf = (rule: string, key: string) => `${rule}\u0001${key}`;

/** Counts the claimed jobs of `queue` by flow rule and concurrency key (one scan of its claimed index). */
export function claimedCounts(src: Pick<ReadSource, "get" | "scan">, queue: string): ClaimedCounts {
  const counts = new Map<string, number>();
  for (const [k] of src.scan({ prefix: claimedPrefix(queue) })) {
    const id = k.slice(claimedPrefix(queue).length);
    const bytes = src.get(jobKey(id));
    if (bytes === undefined) continue;
    const h = decodeJob(jobKey(id), bytes).headers;
    const rule = h?.[FLOW_RULE_HEADER];
    if (rule === undefined) continue;
    const slot = slotOf(rule, h?.[FLOW_CONCURRENCY_KEY_HEADER] ?? "");
    counts.set(slot, (counts.get(slot) ?? 0) + 1);
  }
  return counts;
}

/** The concurrency limit a job's header carries: a positive integer, else undefined (absent or damaged). */
function limitOf(h: Readonly<Record<string, string>>): number | undefined {
  const text = h[FLOW_CONCURRENCY_LIMIT_HEADER];
  if (text === undefined || !/^[1-9][0-9]{0,8}$/.test(text)) return undefined;
  return Number(text);
}

/** The queue's own rate limit as its owner last recorded it (`l/<queue>`); undefined when none or damaged. */
export function storedQueueRate(src: Pick<ReadSource, "get">, queue: string): ResolvedRateLimit | undefined {
  const bytes = src.get(rateConfigKey(queue));
  const c = bytes === undefined ? undefined : decodeRateConfig(bytes);
  if (c === undefined) return undefined;
  try {
    return resolveRateLimit({ limit: c.limit, periodMs: c.periodMs, ...(c.key === undefined ? {} : { key: c.key }) });
  } catch {
    return undefined;
  }
}

/** What `derivedWaiting` reads: the claimed counts, the durable rate windows, the queue's own rate limit, and the time now. */
export interface DurableLimits {
  counts(queue: string): ClaimedCounts;
  source: Pick<ReadSource, "get">;
  queueRate(queue: string): ResolvedRateLimit | undefined;
  now(): number;
}

/**
 * Why pending job `r` waits, from durable state: a rate limit (its flow
 * rule's, then its queue's own), else a full concurrency key of its rule.
 */
export function derivedWaiting(r: JobRecord, d: DurableLimits): WaitingReason | undefined {
  const h = r.headers;
  if (r.state !== "pending") return undefined;
  const rule = h?.[FLOW_RULE_HEADER];
  if (rule !== undefined) {
    const key = h?.[FLOW_RATE_KEY_HEADER] ?? "";
    const held = durableRateReason(d.source, r.queue, key, rule, d.now());
    if (held !== undefined) return { reason: "rate_limit", key, ...held, rule };
  }
  const own = d.queueRate(r.queue);
  if (own !== undefined) {
    const key = own.keyOf(h);
    const held = durableRateReason(d.source, r.queue, key, undefined, d.now());
    if (held !== undefined) return { reason: "rate_limit", key, ...held };
  }
  if (h === undefined || rule === undefined) return undefined;
  const limit = limitOf(h);
  if (limit === undefined) return undefined;
  const key = h[FLOW_CONCURRENCY_KEY_HEADER] ?? "";
  const held = d.counts(r.queue).get(slotOf(rule, key)) ?? 0;
  return held >= limit ? { reason: "concurrency", key, limit, held, rule } : undefined;
}
