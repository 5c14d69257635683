/**
 * @module Operator listings of a sharded store through `TaqubaClient`:
 * runs, jobs and groups merged from every shard, newest first, paged with
 * one cursor that covers all shards (stable while runs keep arriving), a
 * bad cursor refused, and `inspectRun` read on the run's shard. Every
 * shard's owner runs in this process over one MemoryStore.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, TaqubaClient, ValidationError, createShards, type RunRow } from "taquba";
import { openOwner, STEP_QUEUE, type OwnerApp } from "../client/fixtures/app.js";
import { shardOfRun, shardStoreName } from "../../runtime/client/shard-route.js";
import { decodeCursor, encodeCursor, indexSuffix, type IndexScan } from "../../runtime/workflow/runs/run-index.js";
import { mergeRunPages } from "../../runtime/client/shard-listing.js";
import type { RunId } from "taquba";

const SHARDS = 4;
const enc = new TextEncoder();
const json = (v: unknown): Uint8Array => enc.encode(JSON.stringify(v));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setUp(): Promise<{ client: TaqubaClient; shardClients: TaqubaClient[]; owners: OwnerApp[] }> {
  const store = new MemoryStore();
  await createShards(store, "app", SHARDS);
  const owners: OwnerApp[] = [];
  for (let i = 0; i < SHARDS; i++) owners.push(await openOwner(store, { name: shardStoreName("app", i), listIntervalMs: 20 }));
  cleanups.push(async () => void (await Promise.all(owners.map((o) => o.stop()))));
  const opts = { queueName: STEP_QUEUE, pollIntervalMs: 200 };
  const client = await TaqubaClient.open(store, { name: "app", ...opts });
  const shardClients = await Promise.all(Array.from({ length: SHARDS }, (_, i) => TaqubaClient.open(store, { name: shardStoreName("app", i), ...opts })));
  cleanups.push(async () => {
    await client.close();
    await Promise.all(shardClients.map((c) => c.close()));
  });
  return { client, shardClients, owners };
}

const order = (a: RunRow, b: RunRow): number => {
  const x = indexSuffix(a.submittedAtMs, a.runId);
  const y = indexSuffix(b.submittedAtMs, b.runId);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Every page of a listing, following its cursor. */
async function allPages(
  list: (cursor: string | undefined) => Promise<{ runs: readonly RunRow[]; nextCursor?: string }>,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await list(cursor);
    pages++;
    ids.push(...page.runs.map((r) => r.runId));
    cursor = page.nextCursor;
    expect(pages, "the listing ends").toBeLessThan(200);
  } while (cursor !== undefined);
  return { ids, pages };
}

describe("listings of a sharded store", () => {
  it("merge runs from every shard newest first, paged by one cursor, stable while runs arrive", async () => {
    const { client, shardClients } = await setUp();
    const ids = Array.from({ length: 40 }, (_, i) => `run-${String(i).padStart(2, "0")}`);
    expect(new Set(ids.map((id) => shardOfRun(id, SHARDS))).size).toBe(SHARDS);
    // A third wait for a signal, the others end at once.
    for (const [i, id] of ids.entries()) await client.submit({ runId: id, input: json(i % 3 === 0 ? { wait: `w:${id}` } : { i }) });
    for (const [i, id] of ids.entries()) if (i % 3 !== 0) await client.wait(id);
    await expect.poll(async () => (await client.listRuns({ state: "awaiting_signal", limit: 1000 })).runs.length, { timeout: 10_000 }).toBe(14);

    // The truth: every shard's own listing, merged by hand.
    const truth: RunRow[] = [];
    for (const c of shardClients) truth.push(...(await c.listRuns({ limit: 1000 })).runs);
    truth.sort(order);
    expect(truth.map((r) => r.runId).sort()).toEqual(ids);

    const whole = await client.listRuns({ limit: 1000 });
    expect(whole.runs.map((r) => r.runId)).toEqual(truth.map((r) => r.runId));
    expect(whole.nextCursor).toBeUndefined();

    // Pages of 7: every run once, in the same order; runs submitted meanwhile are newer and not in the rest of the listing.
    let extra = 0;
    const paged = await allPages(async (cursor) => {
      const page = await client.listRuns({ limit: 7, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.runs.length).toBeLessThanOrEqual(7);
      await client.submit({ runId: `late-${extra++}`, input: json({ late: true }) });
      return page;
    });
    expect(paged.ids).toEqual(truth.map((r) => r.runId));
    expect(paged.pages).toBeGreaterThanOrEqual(6);

    for (let i = 0; i < extra; i++) await client.wait(`late-${i}`);
    // Filtered listings page the same way, over every shard.
    const waiting = await allPages((cursor) => client.listRuns({ state: "awaiting_signal", limit: 3, ...(cursor === undefined ? {} : { cursor }) }));
    expect(waiting.ids).toEqual(truth.filter((_, i) => truth[i]!.state === "awaiting_signal").map((r) => r.runId));
    const ended = await allPages((cursor) => client.listRuns({ state: "succeeded", limit: 5, ...(cursor === undefined ? {} : { cursor }) }));
    // The late runs (submitted while paging above) ended since: the newest, so listed first.
    expect(ended.ids.slice(0, extra).every((id) => id.startsWith("late-"))).toBe(true);
    expect(ended.ids.slice(extra)).toEqual(truth.filter((r) => r.state === "succeeded").map((r) => r.runId));

    // A cursor is the listing's own: garbage, or one of another filter, is refused.
    await expect(client.listRuns({ cursor: "nonsense" })).rejects.toThrow(ValidationError);
    const first = await client.listRuns({ limit: 2 });
    await expect(client.listRuns({ state: "succeeded", cursor: first.nextCursor! })).rejects.toThrow(ValidationError);
    await expect(client.listJobs({ cursor: "r1.bad" })).rejects.toThrow(ValidationError);
    await expect(client.listGroups({ cursor: "g1.nope" })).rejects.toThrow(ValidationError);

    // inspectRun reads the run's own shard.
    const h = await client.inspectRun(ids[1]!);
    expect(h).toMatchObject({ runId: ids[1] });
    expect(await client.inspectRun("never-submitted")).toBeNull();
  }, 60_000);

  it("merge groups from every shard into one row each, paged by one cursor", async () => {
    const { client } = await setUp();
    const groupIds = Array.from({ length: 7 }, (_, i) => `batch-${i}`);
    for (const id of groupIds) {
      await client.group(id).submit(Array.from({ length: 6 }, (_, k) => ({ key: `k${k}`, input: json({ id, k }) })));
      // Distinct creation times, so the newest-first order is known.
      const t = Date.now();
      await expect.poll(() => Date.now() > t).toBe(true);
    }
    for (const id of groupIds) await client.group(id).join();
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listGroups({ limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      for (const g of page.groups) {
        seen.push(g.groupId);
        expect(g.members).toEqual({ total: 6, active: 0, succeeded: 6, failed: 0, cancelled: 0 });
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(seen).toEqual([...groupIds].reverse());
  }, 60_000);

  it("never lists a row past a shard whose page stopped early, over random shards and page sizes", async () => {
    const scan: IndexScan = { kind: "all" };
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 30; round++) {
      const shards = 1 + rand(5);
      // Each shard: entries in index order; some match the filter, and a page examines at most `budget` entries.
      const index = Array.from({ length: shards }, () => [] as Array<{ suffix: string; row: RunRow; match: boolean }>);
      for (let i = 0; i < 60; i++) {
        const at = 1_000_000 + rand(40);
        const runId = `r${round}-${i}` as RunId;
        index[rand(shards)]!.push({
          suffix: indexSuffix(at, runId),
          row: { runId, state: "pending", step: 0, attempt: 0, submittedAtMs: at, updatedAtMs: at, headers: {} },
          match: rand(3) > 0,
        });
      }
      for (const s of index) s.sort((a, b) => (a.suffix < b.suffix ? -1 : 1));
      const budget = 1 + rand(6);
      const fetch = async (i: number, cursor: string | undefined, limit: number) => {
        const after = cursor === undefined ? "" : decodeCursor(cursor, scan);
        const rows: RunRow[] = [];
        let last: string | undefined;
        let examined = 0;
        for (const e of index[i]!.filter((x) => x.suffix > after)) {
          if (rows.length >= limit || examined >= budget) return { runs: rows, nextCursor: encodeCursor(scan, last!) };
          examined++;
          last = e.suffix;
          if (e.match) rows.push(e.row);
        }
        return { runs: rows };
      };
      const truth = index
        .flat()
        .filter((e) => e.match)
        .sort((a, b) => (a.suffix < b.suffix ? -1 : 1))
        .map((e) => e.row.runId);
      const limit = 1 + rand(8);
      const listed: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; ; pages++) {
        expect(pages).toBeLessThan(500);
        const page = await mergeRunPages(shards, limit, cursor, scan, (i, c) => fetch(i, c, limit));
        expect(page.runs.length).toBeLessThanOrEqual(limit);
        listed.push(...page.runs.map((r) => r.runId));
        if (page.nextCursor === undefined) break;
        cursor = page.nextCursor;
      }
      expect(listed, `round ${round}: ${shards} shards, budget ${budget}, limit ${limit}`).toEqual(truth);
    }
  });
});
