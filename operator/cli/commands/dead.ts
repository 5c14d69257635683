/**
 * @module `taquba dead list|redrive`: dead-lettered jobs of every queue (or
 * one), with the run a step job carried and its last error; a dead step
 * job redriven by retrying its run through the owner.
 */
import { listDeadLetters, type JobRow } from "../../inspect/job-listing.js";
import { Operations } from "../../inspect/operations.js";
import { positiveInt } from "../session.js";
import { EXIT } from "../exit-codes.js";
import { clean, formatTime, table, toJson, type OperatorIo } from "../output.js";
import { stringOption, type Command } from "../registry.js";
import { waitingText } from "../render.js";

/** Longest error text in a table cell; the full text is in `--json` and `jobs show`. */
const ERROR_CELL = 80;

export function jobTable(io: OperatorIo, rows: readonly JobRow[], when: (r: JobRow) => number | undefined): string {
  return table(
    io,
    ["JOB", "QUEUE", "RUN", "STEP", "ATTEMPTS", "AT", "ERROR"],
    rows.map((r) => [
      r.id,
      r.queue,
      r.runId ?? "-",
      r.step === undefined ? "-" : String(r.step),
      `${r.attempt}/${r.maxAttempts}`,
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
  },
  async run(ctx) {
    const reader = await ctx.session.reader();
    const limit = positiveInt("limit", stringOption(ctx, "limit"), 10_000) ?? 100;
    const queue = stringOption(ctx, "queue");
    const after = stringOption(ctx, "after");
    const page = await listDeadLetters(reader, { limit, ...(queue === undefined ? {} : { queue }), ...(after === undefined ? {} : { after }) });
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
