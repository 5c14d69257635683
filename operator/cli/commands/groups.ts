/**
 * @module `taquba groups show <groupId>`: a run group's members counted by
 * state, and the first of them with their runs.
 */
import { Operations } from "../../inspect/operations.js";
import { EXIT } from "../exit-codes.js";
import { clean, formatTime, table, toJson } from "../output.js";
import { stringOption, type Command } from "../registry.js";
import { positiveInt } from "../session.js";
import { block, stateCell } from "../render.js";

const list: Command = {
  path: ["groups", "list"],
  operands: "",
  arity: [0, 0],
  summary: "the step queue's run and job groups, newest first, with member counts (every shard of a sharded store)",
  options: {
    limit: { type: "string", value: "N", description: "most groups (1 to 100, default 20)" },
    cursor: { type: "string", value: "CURSOR", description: "continue from a previous page (printed at the end of a full page)" },
  },
  async run(ctx) {
    const { io, json } = ctx;
    const limit = positiveInt("limit", stringOption(ctx, "limit"), 100);
    const cursor = stringOption(ctx, "cursor");
    const page = await new Operations(ctx.session).groups({ ...(limit === undefined ? {} : { limit }), ...(cursor === undefined ? {} : { cursor }) });
    if (json) {
      io.out(toJson(page));
      return EXIT.ok;
    }
    if (page.groups.length === 0) io.out("no groups");
    else
      io.out(
        table(
          io,
          ["GROUP", "CREATED", "MEMBERS", "ACTIVE", "SUCCEEDED", "FAILED", "CANCELLED"],
          page.groups.map((g) => [
            clean(g.groupId),
            formatTime(g.createdAtMs),
            String(g.members.total),
            String(g.members.active),
            String(g.members.succeeded),
            g.members.failed > 0 ? { text: String(g.members.failed), tone: "bad" as const } : "0",
            String(g.members.cancelled),
          ]),
        ),
      );
    for (const u of page.unreadable ?? []) io.err(clean(u.reason));
    if (page.nextCursor !== undefined) io.out(`\nmore: --cursor ${page.nextCursor}`);
    return EXIT.ok;
  },
};

const show: Command = {
  path: ["groups", "show"],
  operands: "<groupId>",
  arity: [1, 1],
  summary: "a run group's member counts by state and its members' runs",
  async run({ io, json, session, operands }) {
    const groupId = operands[0]!;
    const g = await new Operations(session).group(groupId);
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

export const groupsCommands: readonly Command[] = [list, show];
