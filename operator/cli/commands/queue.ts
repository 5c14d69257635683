/**
 * @module `taquba queue stats`: per-queue counts, the oldest pending job's
 * age, dead letters, WAL objects awaiting a checkpoint, checkpoint age; on
 * a sharded store, every shard's, with a shard column. `taquba queue
 * recount`: a queue's stats record counted again from its indexes,
 * through the owner, with a dry run and a confirmed plan.
 */
import { JOB_STATES } from "../../../runtime/queue/record.js";
import type { JobState } from "../../../runtime/queue/types.js";
import { listQueueJobs } from "../../inspect/job-listing.js";
import { Operations } from "../../inspect/operations.js";
import { readQueueHealth, type QueueHealth, type QueueHealthRow } from "../../inspect/queue-health.js";
import { EXIT } from "../exit-codes.js";
import { clean, formatAge, paint, table, toJson, type OperatorIo } from "../output.js";
import { stringOption, UsageError, type Command } from "../registry.js";
import { positiveInt, type OperatorSession } from "../session.js";
import { jobTable } from "./dead.js";
import type { StatsRecount } from "../../../runtime/queue/stats-recount.js";
import type { QueueStats } from "../../../runtime/queue/record.js";

const stats: Command = {
  path: ["queue", "stats"],
  operands: "",
  arity: [0, 0],
  summary: "counts per queue and state, oldest pending age, dead letters, WAL objects, checkpoint age",
  async run({ io, json, session }) {
    if (await session.sharded()) return shardedStats(io, json, session);
    const reader = await session.reader();
    const now = Date.now();
    const health = await readQueueHealth(session.store(), session.options.name, reader, now);
    if (json) {
      io.out(toJson(health));
      return EXIT.ok;
    }
    const rows = health.queues.map((q) => queueCells(q, now));
    io.out(table(io, ["QUEUE", ...COUNT_HEADERS], rows));
    for (const d of health.damagedStats ?? []) io.err(damagedStatsText(d.queue, d.detail));
    io.out("");
    io.out(`dead letters      ${health.deadLetters > 0 ? paint(io, "bad", String(health.deadLetters)) : "0"}`);
    io.out(`WAL objects       ${health.walObjects}`);
    io.out(`last checkpoint   ${checkpointText(health, now)}`);
    return EXIT.ok;
  },
};

/** A queue whose stats record does not read, and what to run. */
function damagedStatsText(queue: string, detail: string, shard?: number): string {
  const on = shard === undefined ? "" : ` on shard ${shard}`;
  return `queue ${clean(queue)}${on}: its stats record is damaged (${clean(detail)}); every move of it is refused until it is recounted: taquba queue recount ${clean(queue)}${shard === undefined ? "" : ` --shard ${shard}`} --dry-run`;
}

const COUNT_HEADERS = ["PENDING", "SCHEDULED", "CLAIMED", "DONE", "DEAD", "OLDEST PENDING"];

function checkpointText(health: QueueHealth, now: number): string {
  const cp = health.checkpoint;
  return cp === undefined ? "none yet" : `#${cp.manifest}, ${formatAge(now - cp.writtenAt)} ago`;
}

/** `queue stats` on a sharded store: each shard's queues with a shard column, then each shard's store. */
async function shardedStats(io: OperatorIo, json: boolean, session: OperatorSession): Promise<number> {
  const shards = await new Operations(session).healthByShard();
  if (json) {
    io.out(toJson({ shards }));
    return EXIT.ok;
  }
  const now = Date.now();
  const rows = shards.flatMap((s) => (s.health === null ? [] : s.health.queues.map((q) => [String(s.shard), ...queueCells(q, now)])));
  io.out(rows.length === 0 ? "no queues on any shard yet" : table(io, ["SHARD", "QUEUE", ...COUNT_HEADERS], rows));
  for (const s of shards) for (const d of s.health?.damagedStats ?? []) io.err(damagedStatsText(d.queue, d.detail, s.shard ?? undefined));
  io.out("");
  io.out(
    table(
      io,
      ["SHARD", "DEAD LETTERS", "WAL OBJECTS", "LAST CHECKPOINT"],
      shards.map((s) =>
        s.health === null
          ? [String(s.shard), "-", "-", "never opened"]
          : [
              String(s.shard),
              s.health.deadLetters > 0 ? { text: String(s.health.deadLetters), tone: "bad" as const } : "0",
              String(s.health.walObjects),
              checkpointText(s.health, now),
            ],
      ),
    ),
  );
  return EXIT.ok;
}

function queueCells(q: QueueHealthRow, now: number) {
  return [
    q.queue,
    String(q.counts.pending),
    String(q.counts.scheduled),
    String(q.counts.claimed),
    String(q.counts.done),
    q.counts.dead > 0 ? { text: String(q.counts.dead), tone: "bad" as const } : "0",
    q.oldestPendingAt === undefined ? "-" : `${q.oldestApproximate ? ">=" : ""}${formatAge(now - q.oldestPendingAt)}`,
  ];
}

const jobs: Command = {
  path: ["queue", "jobs"],
  operands: "<queue>",
  arity: [1, 1],
  summary: "one queue's jobs in one state, in the queue's order",
  options: {
    state: { type: "string", value: "STATE", description: `${JOB_STATES.join(", ")} (default: pending)` },
    limit: { type: "string", value: "N", description: "most jobs listed (default: 100)" },
    cursor: { type: "string", value: "CURSOR", description: "continue from a previous page (printed at the end of a full page)" },
  },
  async run(ctx) {
    const state = stringOption(ctx, "state") ?? "pending";
    if (!(JOB_STATES as readonly string[]).includes(state)) throw new UsageError(`--state takes one of ${JOB_STATES.join(", ")}, got ${JSON.stringify(state)}`);
    const limit = positiveInt("limit", stringOption(ctx, "limit"), 10_000) ?? 100;
    const cursor = stringOption(ctx, "cursor");
    const reader = await ctx.session.reader();
    const page = await listQueueJobs(reader, ctx.operands[0]!, state as JobState, { limit, ...(cursor === undefined ? {} : { cursor }) });
    if (ctx.json) ctx.io.out(toJson(page));
    else {
      ctx.io.out(
        page.items.length === 0 ? `no ${state} jobs` : jobTable(ctx.io, page.items, (r) => (state === "dead" ? r.failedAt : (r.runAt ?? r.enqueuedAt))),
      );
      if (page.next !== undefined) ctx.io.out(`\nmore: --cursor ${JSON.stringify(page.next)}`);
    }
    return EXIT.ok;
  },
};

const countsText = (c: QueueStats) => `pending ${c.pending}, scheduled ${c.scheduled}, claimed ${c.claimed}, done ${c.done}, dead ${c.dead}`;

/** What a recount found and wrote (or, for a dry run, would write); a dry run's ends with the plan's token, to confirm it with `--plan`. */
export function recountText(out: StatsRecount, shard?: number): string {
  const q = clean(out.queueName);
  const found =
    out.damage !== undefined
      ? `its stats record is damaged (${clean(out.damage)})`
      : out.stored !== undefined
        ? `its stats record holds ${countsText(out.stored)}`
        : "it has no stats record";
  const carried = out.carriedDone === 0 ? "" : ` (reads add the ${out.carriedDone} done jobs its claimed entries carry)`;
  const what = !out.changed
    ? "the record already holds what its jobs count: nothing to write"
    : `${out.dryRun ? "dry run, nothing written: the recount would write" : "recounted: the record now holds"} ${countsText(out.recounted)}${carried}`;
  const text = `queue ${q}: ${found}\n${what}`;
  if (!out.dryRun || !out.changed) return text;
  const again = shard === undefined ? "" : ` --shard ${shard}`;
  return `${text}\nplan ${out.plan}: confirm this plan with taquba queue recount ${q}${again} --plan ${out.plan} (refused, nothing written, if a job moved since)`;
}

const recount: Command = {
  path: ["queue", "recount"],
  operands: "<queue>",
  arity: [1, 1],
  summary: "count a queue's stats record again from its jobs, through the owner: the mend of a damaged stats record (see --dry-run)",
  options: {
    "dry-run": { type: "boolean", description: "say what the recount would write, writing nothing" },
    plan: {
      type: "string",
      value: "TOKEN",
      description: "the plan a --dry-run printed: refused with exit 4, nothing written, when a job moved or the record changed since",
    },
    shard: { type: "string", value: "N", description: "on a sharded store: the shard whose stats to recount (each keeps its own)" },
  },
  async run(ctx) {
    const queueName = ctx.operands[0]!;
    const plan = stringOption(ctx, "plan");
    const shardText = stringOption(ctx, "shard");
    const shard = shardText === undefined ? undefined : shardNumber(shardText);
    const out = await new Operations(ctx.session).recountStats(
      queueName,
      { dryRun: ctx.options["dry-run"] === true, ...(plan === undefined ? {} : { plan }) },
      shard,
    );
    ctx.io.out(ctx.json ? toJson(out) : recountText(out, shard));
    return EXIT.ok;
  },
};

/** A shard's number as `--shard` gives it. */
function shardNumber(text: string): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`--shard takes a shard's number, a whole number from 0, got ${JSON.stringify(text)}`);
  return n;
}

export const queueCommands: readonly Command[] = [stats, jobs, recount];
