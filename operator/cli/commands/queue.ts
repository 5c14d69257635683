/**
 * @module `taquba queue stats`: per-queue counts, the oldest pending job's
 * age, dead letters, WAL objects awaiting a checkpoint, checkpoint age.
 */
import { JOB_STATES } from "../../../runtime/queue/record.js";
import type { JobState } from "../../../runtime/queue/types.js";
import { listQueueJobs } from "../../inspect/job-listing.js";
import { readQueueHealth } from "../../inspect/queue-health.js";
import { EXIT } from "../exit-codes.js";
import { formatAge, paint, table, toJson } from "../output.js";
import { stringOption, UsageError, type Command } from "../registry.js";
import { positiveInt } from "../session.js";
import { jobTable } from "./dead.js";

const stats: Command = {
  path: ["queue", "stats"],
  operands: "",
  arity: [0, 0],
  summary: "counts per queue and state, oldest pending age, dead letters, WAL objects, checkpoint age",
  async run({ io, json, session }) {
    const reader = await session.reader();
    const now = Date.now();
    const health = await readQueueHealth(session.store(), session.options.name, reader, now);
    if (json) {
      io.out(toJson(health));
      return EXIT.ok;
    }
    const rows = health.queues.map((q) => [
      q.queue,
      String(q.counts.pending),
      String(q.counts.scheduled),
      String(q.counts.claimed),
      String(q.counts.done),
      q.counts.dead > 0 ? { text: String(q.counts.dead), tone: "bad" as const } : "0",
      q.oldestPendingAt === undefined ? "-" : `${q.oldestApproximate ? ">=" : ""}${formatAge(now - q.oldestPendingAt)}`,
    ]);
    io.out(table(io, ["QUEUE", "PENDING", "SCHEDULED", "CLAIMED", "DONE", "DEAD", "OLDEST PENDING"], rows));
    io.out("");
    const cp = health.checkpoint;
    io.out(`dead letters      ${health.deadLetters > 0 ? paint(io, "bad", String(health.deadLetters)) : "0"}`);
    io.out(`WAL objects       ${health.walObjects}`);
    io.out(`last checkpoint   ${cp === undefined ? "none yet" : `#${cp.manifest}, ${formatAge(now - cp.writtenAt)} ago`}`);
    return EXIT.ok;
  },
};

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
