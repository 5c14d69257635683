/**
 * @module `taquba queue stats`: per-queue counts, the oldest pending job's
 * age, dead letters, WAL objects awaiting a checkpoint, checkpoint age.
 */
import { readQueueHealth } from "../../inspect/queue-health.js";
import { EXIT } from "../exit-codes.js";
import { formatAge, paint, table, toJson } from "../output.js";
import type { Command } from "../registry.js";

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

export const queueCommands: readonly Command[] = [stats];
