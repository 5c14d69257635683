/**
 * @module `taquba schedules list`: the cron schedules of the owner's step
 * queue with their next and last ticks, read from its durable state.
 */
import { readSchedules } from "../../../runtime/workflow/schedules/schedules.js";
import { EXIT } from "../exit-codes.js";
import { paint, table, toJson } from "../output.js";
import type { Command } from "../registry.js";

const iso = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());

const list: Command = {
  path: ["schedules", "list"],
  operands: "",
  arity: [0, 0],
  summary: "cron schedules of the step queue with their next and last ticks, policies and paused state",
  async run({ io, json, session }) {
    const reader = await session.reader();
    const schedules = await readSchedules(reader, session.options.stepQueue, Date.now());
    if (json) {
      io.out(toJson({ schedules }));
      return EXIT.ok;
    }
    if (schedules.length === 0) {
      io.out(`no schedules on step queue "${session.options.stepQueue}"`);
      return EXIT.ok;
    }
    const rows = schedules.map((s) => [
      s.id,
      s.cron,
      s.timezone,
      s.paused ? { text: "paused", tone: "warn" as const } : "active",
      iso(s.nextTickMs),
      iso(s.lastTickMs),
      s.lastRunId ?? "-",
      s.overlap,
      typeof s.catchUp === "string" ? s.catchUp : `within ${s.catchUp.allWithinMs} ms`,
    ]);
    io.out(table(io, ["SCHEDULE", "CRON", "TIMEZONE", "STATE", "NEXT TICK", "LAST TICK", "LAST RUN", "OVERLAP", "CATCH-UP"], rows));
    const buffered = schedules.filter((s) => s.bufferedTickMs !== null);
    for (const s of buffered) io.out(paint(io, "dim", `${s.id}: tick ${iso(s.bufferedTickMs)} waits for run ${s.lastRunId} to end`));
    return EXIT.ok;
  },
};

export const scheduleCommands: readonly Command[] = [list];
