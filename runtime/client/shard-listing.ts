/**
 * @module Listings of a sharded store: one page merged from a page of
 * every shard, newest first, with one cursor that covers all shards.
 *
 * Every shard's index orders its entries by the same suffix (inverted
 * time, then the run id or group tag), and a shard's cursor is that
 * position. So a merged page asks each shard for a page after the same
 * position, merges the rows by suffix, and keeps only rows up to the
 * lowest position any shard has examined (a shard whose page stopped early
 * may hold rows before another shard's last). The next cursor is the
 * position of the last row kept (or that lowest position when fewer rows
 * than the limit were kept): each shard continues after it, so no row is
 * listed twice or skipped, whatever the shards' pages held.
 *
 * A group with members on many shards has an index entry on each, all at
 * the manifest's creation time: the merge lists it once with the counts of
 * every shard added up.
 */
import { ValidationError } from "../errors.js";
import { groupTag } from "../workflow/groups/group-keys.js";
import type { GroupMemberCounts, GroupPage, GroupRow } from "../workflow/groups/group-listing.js";
import { decodeCursor, encodeCursor, indexSuffix, type IndexScan } from "../workflow/runs/run-index.js";
import type { RunPage, RunRow } from "../workflow/runs/run-listing.js";

/** Suffixes compare as strings: earlier in the index is newer. */
function lowest(positions: ReadonlyArray<string | undefined>): string | undefined {
  let low: string | undefined;
  for (const p of positions) if (p !== undefined && (low === undefined || p < low)) low = p;
  return low;
}

/** Keeps the first `limit` of `rows` (sorted by suffix) at or before `bound`; the next position, or undefined when the listing is done. */
function take<T extends { suffix: string }>(rows: readonly T[], limit: number, bound: string | undefined): { kept: T[]; next: string | undefined } {
  const within = bound === undefined ? rows : rows.filter((r) => r.suffix <= bound);
  const kept = within.slice(0, limit);
  if (kept.length === limit && (within.length > limit || bound !== undefined)) return { kept, next: kept[kept.length - 1]!.suffix };
  return { kept, next: bound };
}

/**
 * One merged page of runs: `fetch` lists one shard with the options given
 * (the same cursor for every shard). `scan` is the index the options pick,
 * which the cursor records.
 */
export async function mergeRunPages(
  shards: number,
  limit: number,
  cursor: string | undefined,
  scan: IndexScan,
  fetch: (shard: number, cursor: string | undefined) => Promise<RunPage>,
): Promise<RunPage> {
  // A bad cursor is refused here, once, in the listing's own words.
  if (cursor !== undefined) decodeCursor(cursor, scan);
  const pages = await Promise.all(Array.from({ length: shards }, (_, i) => fetch(i, cursor)));
  const bound = lowest(pages.map((p) => (p.nextCursor === undefined ? undefined : decodeCursor(p.nextCursor, scan))));
  const rows: Array<RunRow & { suffix: string }> = pages
    .flatMap((p) => p.runs.map((r) => ({ ...r, suffix: indexSuffix(r.submittedAtMs, r.runId) })))
    .sort((a, b) => (a.suffix < b.suffix ? -1 : a.suffix > b.suffix ? 1 : 0));
  const { kept, next } = take(rows, limit, bound);
  const unreadable = pages.flatMap((p) => p.unreadable ?? []);
  return {
    runs: kept.map(({ suffix: _, ...r }) => r),
    ...(next === undefined ? {} : { nextCursor: encodeCursor(scan, next) }),
    ...(unreadable.length === 0 ? {} : { unreadable }),
  };
}

const GROUP_CURSOR = /^g1\.(\d{16}[0-9a-f]{20})$/;

function groupPosition(cursor: string): string {
  const m = GROUP_CURSOR.exec(cursor);
  if (m === null)
    throw new ValidationError(
      `listGroups: cursor ${JSON.stringify(cursor.slice(0, 80))} is not a group listing cursor; pass the nextCursor of the previous page`,
    );
  return m[1]!;
}

function addCounts(a: GroupMemberCounts, b: GroupMemberCounts): GroupMemberCounts {
  return {
    total: a.total + b.total,
    active: a.active + b.active,
    succeeded: a.succeeded + b.succeeded,
    failed: a.failed + b.failed,
    cancelled: a.cancelled + b.cancelled,
  };
}

/** One merged page of run groups; a group listed by several shards is one row with their counts added. */
export async function mergeGroupPages(
  shards: number,
  limit: number,
  cursor: string | undefined,
  fetch: (shard: number, cursor: string | undefined) => Promise<GroupPage>,
): Promise<GroupPage> {
  if (cursor !== undefined && typeof cursor !== "string") throw new ValidationError("listGroups: cursor must be the nextCursor string of a previous page");
  if (cursor !== undefined) groupPosition(cursor);
  const pages = await Promise.all(Array.from({ length: shards }, (_, i) => fetch(i, cursor)));
  const bound = lowest(pages.map((p) => (p.nextCursor === undefined ? undefined : groupPosition(p.nextCursor))));
  const bySuffix = new Map<string, GroupRow & { suffix: string }>();
  // A group whose members a shard could not count is left out whole: the other shards' counts alone would be wrong.
  const unreadable = pages.flatMap((p) => p.unreadable ?? []);
  const damaged = new Set(unreadable.map((u) => u.groupId));
  for (const p of pages) {
    for (const g of p.groups) {
      if (damaged.has(g.groupId)) continue;
      const suffix = indexSuffix(g.createdAtMs, groupTag(g.groupId));
      const had = bySuffix.get(suffix);
      bySuffix.set(suffix, had === undefined ? { ...g, suffix } : { ...had, members: addCounts(had.members, g.members) });
    }
  }
  const rows = [...bySuffix.values()].sort((a, b) => (a.suffix < b.suffix ? -1 : a.suffix > b.suffix ? 1 : 0));
  const { kept, next } = take(rows, limit, bound);
  return {
    groups: kept.map(({ suffix: _, ...g }) => g),
    ...(next === undefined ? {} : { nextCursor: `g1.${next}` }),
    ...(unreadable.length === 0 ? {} : { unreadable }),
  };
}
