/**
 * @module `taquba dashboard <store-url>`: serves the web dashboard until
 * interrupted (Ctrl-C or SIGTERM).
 */
import { redactUrl } from "../../../runtime/redact.js";
import { Operations } from "../../inspect/operations.js";
import { bindingProblem } from "../../dashboard/access.js";
import { DEFAULT_POLL_INTERVAL_MS, startDashboard } from "../../dashboard/server.js";
import { EXIT } from "../exit-codes.js";
import { stringOption, UsageError, type Command } from "../registry.js";
import { NoSuchStoreError, positiveInt, type OperatorSession } from "../session.js";

/**
 * A refresh of every shard's read view; true when any changed, or a shard
 * was read for the first time (its owner just opened it). A shard no
 * owner opened yet has nothing to read.
 */
function shardRefresher(shards: readonly OperatorSession[]): () => Promise<boolean> {
  const read = new Set<OperatorSession>();
  return async () => {
    const changed = await Promise.all(
      shards.map(async (s) => {
        try {
          const reader = await s.reader();
          if (!read.has(s)) {
            read.add(s);
            return true;
          }
          return await reader.refresh();
        } catch (e) {
          if (e instanceof NoSuchStoreError) return false;
          throw e;
        }
      }),
    );
    return changed.includes(true);
  };
}

const dashboard: Command = {
  path: ["dashboard"],
  operands: "",
  arity: [0, 0],
  summary: "serve the web dashboard (loopback by default; another --host needs --token)",
  options: {
    port: { type: "string", value: "PORT", description: "port to listen on (default: 4400; 0 picks a free one)" },
    host: { type: "string", value: "HOST", description: "address to bind (default: 127.0.0.1)" },
    token: { type: "string", value: "TOKEN", description: "a secret every request must carry; required off loopback (or TAQUBA_DASHBOARD_TOKEN)" },
    poll: { type: "string", value: "MS", description: `how often an open page's data is refreshed from the store (default: ${DEFAULT_POLL_INTERVAL_MS})` },
  },
  async run(ctx) {
    const rawPort = stringOption(ctx, "port");
    const port = rawPort === "0" ? 0 : (positiveInt("port", rawPort, 65_535) ?? 4400);
    const host = stringOption(ctx, "host") ?? "127.0.0.1";
    const token = stringOption(ctx, "token") ?? process.env["TAQUBA_DASHBOARD_TOKEN"];
    const pollIntervalMs = positiveInt("poll", stringOption(ctx, "poll"), 3_600_000) ?? DEFAULT_POLL_INTERVAL_MS;
    if (pollIntervalMs < 200) throw new UsageError("--poll must be at least 200 ms");
    const problem = bindingProblem(host, token);
    if (problem !== undefined) throw new UsageError(problem);
    const { session } = ctx;
    // Fail now, before listening, when the store or the name is wrong (a sharded store is its shards).
    const shards = await session.shards();
    if (shards === undefined) await session.reader();
    const ops = new Operations(session);
    const server = await startDashboard({
      ops,
      refresh: shards === undefined ? async () => (await session.reader()).refresh() : shardRefresher(shards),
      info: { name: session.options.name, stepQueue: session.options.stepQueue, store: redactUrl(session.options.storeUrl) },
      host,
      port,
      ...(token === undefined ? {} : { token }),
      pollIntervalMs,
    });
    ctx.io.out(`dashboard of ${session.options.name} at ${server.url}`);
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
        resolve();
      };
      process.on("SIGINT", stop);
      process.on("SIGTERM", stop);
    });
    await server.close();
    return EXIT.ok;
  },
};

export const dashboardCommands: readonly Command[] = [dashboard];
