/**
 * @module `taquba dead list|redrive`: dead-lettered jobs of every queue (or
 * one), with the run a step job carried and its last error, on every shard
 * of a sharded store; a dead step job redriven by retrying its run through
 * the owner.
 */
import { listDeadLetters, type JobRow } from "../../inspect/job-listing.js";
import { Operations } from "../../inspect/operations.js";
import { positiveInt } from "../session.js";
import { EXIT } from "../exit-codes.js";
import { clean, formatTime, table, toJson, type OperatorIo } from "../output.js";
import { stringOption, UsageError, type Command, type CommandContext } from "../registry.js";
import { waitingText } from "../render.js";

/** Longest error text in a table cell; the full text is in `--json` and `jobs show`. */
const ERROR_CELL = 80;

/** The table of `rows`; with `shards` (one per row), a SHARD column first. */
export function jobTable(io: OperatorIo, rows: readonly JobRow[], when: (r: JobRow) => number | undefined, shards?: readonly string[]): string {
  return table(
    io,
    [...(shards === undefined ? [] : ["SHARD"]), "JOB", "QUEUE", "RUN", "STEP", "ATTEMPTS", "REQUEUES", "AT", "ERROR"],
    rows.map((r, i) => [
      ...(shards === undefined ? [] : [shards[i]!]),
      r.id,
      r.queue,
      r.runId ?? "-",
      r.step === undefined ? "-" : String(r.step),
      `${r.attempt}/${r.maxAttempts}`,
      String(r.requeues),
      formatTime(when(r)),
      r.lastError === undefined
        ? r.waiting === undefined
          ? "-"
          : `held: ${waitingText(r.waiting)}`
        : { text: r.lastError.length > ERROR_CELL ? `${r.lastError.slice(0, ERROR_CELL - 3)}...` : r.lastError, tone: "bad" },
    ]),
  );
}

const list: Command = {
  path: ["dead", "list"],
  operands: "",
  arity: [0, 0],
  summary: "dead-lettered jobs of every queue, with their run and last error",
  options: {
    queue: { type: "string", value: "QUEUE", description: "only this queue" },
    limit: { type: "string", value: "N", description: "most jobs listed (default: 100)" },
    after: { type: "string", value: "POSITION", description: "continue after this position (printed at the end of a full page)" },
    shard: { type: "string", value: "N", description: "on a sharded store: only this shard (needed with --after)" },
  },
  async run(ctx) {
    const limit = positiveInt("limit", stringOption(ctx, "limit"), 10_000) ?? 100;
    const queue = stringOption(ctx, "queue");
    const after = stringOption(ctx, "after");
    const shardText = stringOption(ctx, "shard");
    const opts = { limit, ...(queue === undefined ? {} : { queue }), ...(after === undefined ? {} : { after }) };
    if (await ctx.session.sharded()) return listSharded(ctx, opts, shardText);
    if (shardText !== undefined) throw new UsageError("this store is not split into shards: leave out --shard");
    const reader = await ctx.session.reader();
    const page = await listDeadLetters(reader, opts);
    if (ctx.json) {
      ctx.io.out(toJson(page));
      return EXIT.ok;
    }
    if (page.items.length === 0) ctx.io.out("no dead letters");
    else ctx.io.out(jobTable(ctx.io, page.items, (r) => r.failedAt));
    if (page.next !== undefined) ctx.io.out(`\nmore: --after ${page.next}`);
    return EXIT.ok;
  },
};

/** `dead list` on a sharded store: a page of every shard (or of the one asked for), with a shard column. */
async function listSharded(ctx: CommandContext, opts: { limit: number; queue?: string; after?: string }, shardText: string | undefined): Promise<number> {
  const count = (await ctx.session.shards())!.length;
  const shard = shardText === undefined ? undefined : positiveIntOrZero("shard", shardText, count - 1);
  if (opts.after !== undefined && shard === undefined) throw new UsageError("a dead letter position belongs to one shard: give --shard with --after");
  const shards = await new Operations(ctx.session).deadByShard({ ...opts, ...(shard === undefined ? {} : { shard }) });
  if (ctx.json) {
    ctx.io.out(toJson({ shards }));
    return EXIT.ok;
  }
  const rows = shards.flatMap((s) => s.items.map((item) => ({ shard: s.shard!, item })));
  if (rows.length === 0) ctx.io.out(`no dead letters on ${shard === undefined ? `any of the ${count} shards` : `shard ${shard}`}`);
  else {
    const lines = jobTable(
      ctx.io,
      rows.map((r) => r.item),
      (r) => r.failedAt,
      rows.map((r) => String(r.shard)),
    );
    ctx.io.out(lines);
  }
  for (const s of shards) if (s.next !== undefined) ctx.io.out(`\nmore on shard ${s.shard}: --shard ${s.shard} --after ${s.next}`);
  return EXIT.ok;
}

/** A shard number from 0 to `max`, or a usage error. */
function positiveIntOrZero(name: string, text: string, max: number): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n > max) throw new UsageError(`--${name} takes a whole number from 0 to ${max}, got ${JSON.stringify(text)}`);
  return n;
}

const redrive: Command = {
  path: ["dead", "redrive"],
  operands: "<jobId>",
  arity: [1, 1],
  summary: "redrive a dead job: a step job's run (or typed job) is retried at that step; a plain queue's job is requeued",
  async run(ctx) {
    const out = await new Operations(ctx.session).redrive(ctx.operands[0]!);
    const text =
      out.kind === "run"
        ? `run ${clean(out.runId)} re-opened at step ${out.step} (job ${out.jobId})`
        : `job ${clean(out.jobId)} of queue ${clean(out.queueName)} requeued with fresh attempts`;
    ctx.io.out(ctx.json ? toJson(out) : text);
    return EXIT.ok;
  },
};

export const deadCommands: readonly Command[] = [list, redrive];
