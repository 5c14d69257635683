/**
 * @module Why a pending job waits, as a reader in another process can tell
 * from durable state alone: its flow rule's concurrency key is full when
 * the jobs claimed under the same rule and key number at least the limit
 * its `FLOW_CONCURRENCY_LIMIT_HEADER` carries. The owner's own answer
 * (`heldBack`) reads its in-memory slots; this one counts claimed records,
 * which commit with the claims they describe, so it needs no write of its
 * own. Rate windows are not derivable: a finished job's claim time is gone
 * with its record. Pure over a read source.
 */
import { FLOW_CONCURRENCY_KEY_HEADER, FLOW_CONCURRENCY_LIMIT_HEADER, FLOW_RULE_HEADER } from "./admission.js";
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

/** Whether pending job `r` waits for a full concurrency key of its flow rule, by `counts` of its queue. */
export function derivedWaiting(r: JobRecord, counts: (queue: string) => ClaimedCounts): WaitingReason | undefined {
  const h = r.headers;
  if (r.state !== "pending" || h === undefined) return undefined;
  const rule = h[FLOW_RULE_HEADER];
  const limit = limitOf(h);
  if (rule === undefined || limit === undefined) return undefined;
  const key = h[FLOW_CONCURRENCY_KEY_HEADER] ?? "";
  const held = counts(r.queue).get(slotOf(rule, key)) ?? 0;
  return held >= limit ? { reason: "concurrency", key, limit, held, rule } : undefined;
}
