/**
 * @module `taquba groups show <groupId>`: a run group's members counted by
 * state, and the first of them with their runs.
 */
import { readGroupSummary } from "../../inspect/group-summary.js";
import { EXIT } from "../exit-codes.js";
import { clean, formatTime, table, toJson } from "../output.js";
import type { Command } from "../registry.js";
import { block, stateCell } from "../render.js";

const show: Command = {
  path: ["groups", "show"],
  operands: "<groupId>",
  arity: [1, 1],
  summary: "a run group's member counts by state and its members' runs",
  async run({ io, json, session, operands }) {
    const groupId = operands[0]!;
    const reader = await session.reader();
    const g = await readGroupSummary(await session.view(), reader, session.memos(), groupId);
    if (g === null) {
      io.err(`no run group ${JSON.stringify(clean(groupId))} in this step queue: never submitted, or forgotten`);
      return EXIT.notFound;
    }
    if (json) {
      io.out(toJson(g));
      return EXIT.ok;
    }
    const c = g.counts;
    io.out(
      block(io, [
        ["group", g.groupId],
        ["created", formatTime(g.createdAt)],
        [
          "members",
          `${c.total}: ${c.succeeded} succeeded, ${c.failed} failed, ${c.cancelled} cancelled, ${c.running} running, ${c.pending} pending, ${c.unsubmitted} unsubmitted`,
        ],
      ]),
    );
    io.out("");
    io.out(
      table(
        io,
        ["KEY", "RUN", "STATE", "ENDED", "ERROR"],
        g.members.map((m) => [m.key, m.runId, stateCell(m.state), formatTime(m.terminatedAt), m.error ?? "-"]),
      ),
    );
    if (g.membersTruncated) io.out(`\n(first ${g.members.length} of ${c.total} members; --json gives the same page)`);
    return EXIT.ok;
  },
};

export const groupsCommands: readonly Command[] = [show];
