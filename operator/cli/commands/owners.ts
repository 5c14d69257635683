/**
 * @module `taquba owners`: per shard (one line for an unsharded store), the
 * process holding the owner lease, when the lease runs out unless renewed,
 * and the backlog of the step queue and of the client inbox.
 */
import { readOwners } from "../../../runtime/cluster/owners-status.js";
import { EXIT } from "../exit-codes.js";
import { formatAge, paint, table, toJson } from "../output.js";
import type { Command } from "../registry.js";

const owners: Command = {
  path: ["owners"],
  operands: "",
  arity: [0, 0],
  summary: "per shard: the owning process, its lease expiry, the step backlog and waiting client requests",
  async run({ io, json, session }) {
    const now = Date.now();
    const lines = await readOwners(session.store(), session.options.name, { queueName: session.options.stepQueue, now: () => now });
    const only = lines[0]!;
    if (lines.length === 1 && only.owner === null && only.leaseExpiresAt === null && only.backlog === null && only.inbox.requests === 0) {
      // Not sharded, no lease, no queue, no requests: most likely a wrong --name.
      io.err(`no queue store or owner lease named ${JSON.stringify(session.options.name)} in ${session.options.storeUrl}: check --name and the store URL`);
      return EXIT.notFound;
    }
    if (json) {
      io.out(toJson({ at: now, shards: lines }));
      return EXIT.ok;
    }
    const rows = lines.map((l) => [
      l.shard === null ? "-" : String(l.shard),
      l.owner === null ? { text: "none", tone: "bad" as const } : l.owner,
      l.leaseExpiresAt === null
        ? "-"
        : l.leaseExpiresAt >= now
          ? `in ${formatAge(l.leaseExpiresAt - now)}`
          : { text: `${formatAge(now - l.leaseExpiresAt)} ago`, tone: "warn" as const },
      l.backlog === null ? "-" : String(l.backlog.pending + l.backlog.scheduled),
      l.backlog === null ? "-" : String(l.backlog.running),
      String(l.inbox.requests),
      l.inbox.oldestMs === null ? "-" : formatAge(l.inbox.oldestMs),
    ]);
    io.out(table(io, ["SHARD", "OWNER", "LEASE EXPIRES", "BACKLOG", "RUNNING", "INBOX", "OLDEST REQUEST"], rows));
    const unowned = lines.filter((l) => l.owner === null).length;
    if (unowned > 0) io.out(paint(io, "warn", `${unowned} of ${lines.length} without an owner: no worker holds the lease, so nothing runs there`));
    return EXIT.ok;
  },
};

export const ownersCommands: readonly Command[] = [owners];
