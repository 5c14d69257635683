/**
 * @module `taquba queue stats`: per-queue counts, the oldest pending job's
 * age, dead letters, WAL objects awaiting a checkpoint, checkpoint age; on
 * a sharded store, every shard's, with a shard column.
 */
import { JOB_STATES } from "../../../runtime/queue/record.js";
import type { JobState } from "../../../runtime/queue/types.js";
import { listQueueJobs } from "../../inspect/job-listing.js";
import { Operations } from "../../inspect/operations.js";
import { readQueueHealth, type QueueHealth, type QueueHealthRow } from "../../inspect/queue-health.js";
import { EXIT } from "../exit-codes.js";
import { formatAge, paint, table, toJson, type OperatorIo } from "../output.js";
import { stringOption, UsageError, type Command } from "../registry.js";
import { positiveInt, type OperatorSession } from "../session.js";
import { jobTable } from "./dead.js";

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
    io.out("");
    io.out(`dead letters      ${health.deadLetters > 0 ? paint(io, "bad", String(health.deadLetters)) : "0"}`);
    io.out(`WAL objects       ${health.walObjects}`);
    io.out(`last checkpoint   ${checkpointText(health, now)}`);
    return EXIT.ok;
  },
};

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

export const queueCommands: readonly Command[] = [stats, jobs];
