/**
 * @module `taquba jobs list|show|retry`: typed jobs (runs on the step queue
 * whose id is the job id): listed by job name and state; one job's outcome
 * as its handle would report it, with its run's timeline; a failed job run
 * again through the owner.
 */
import { readJobOutcome } from "../../../runtime/jobs/job-results.js";
import { Operations } from "../../inspect/operations.js";
import { EXIT } from "../exit-codes.js";
import { clean, toJson } from "../output.js";
import { stringOption, type Command } from "../registry.js";
import { block, renderRun } from "../render.js";
import { LISTING_OPTIONS, listingFilters, printRunPage } from "./runs.js";

const list: Command = {
  path: ["jobs", "list"],
  operands: "",
  arity: [0, 0],
  summary: "typed jobs, newest first, by job name, state and submission time",
  options: { ...LISTING_OPTIONS, job: { type: "string", value: "NAME", description: "only jobs of this name (a defineJob name)" } },
  async run(ctx) {
    const job = stringOption(ctx, "job");
    const page = await new Operations(ctx.session).jobs({ ...listingFilters(ctx), ...(job === undefined ? {} : { job }) });
    printRunPage(ctx.io, page, ctx.json);
    return EXIT.ok;
  },
};

const retry: Command = {
  path: ["jobs", "retry"],
  operands: "<jobId>",
  arity: [1, 1],
  summary: "run a failed or cancelled job again with its input; its stored result is replaced",
  async run(ctx) {
    const out = await new Operations(ctx.session).retryJob(ctx.operands[0]!);
    ctx.io.out(ctx.json ? toJson(out) : `job ${clean(out.runId)} runs again (queue job ${out.jobId})`);
    return EXIT.ok;
  },
};

const show: Command = {
  path: ["jobs", "show"],
  operands: "<jobId>",
  arity: [1, 1],
  summary: "a typed job's outcome (output or error) and its run's timeline",
  async run({ io, json, session, operands }) {
    const jobId = operands[0]!;
    const shard = await session.forRun(jobId);
    const reader = await shard.reader();
    const view = await shard.view();
    const [detail, outcome] = await Promise.all([new Operations(session).run(jobId), readJobOutcome<unknown, unknown>(view, reader, jobId)]);
    if (detail === null || outcome === "unknown") {
      io.err(`no record of job ${JSON.stringify(clean(jobId))}: it was never submitted to this step queue, or it ended and was swept`);
      return EXIT.notFound;
    }
    const resolved = outcome === "active" ? undefined : outcome;
    if (json) {
      io.out(toJson({ jobId, ...(resolved === undefined ? {} : { outcome: resolved.outcome, errorKind: resolved.kind }), run: detail }));
      return EXIT.ok;
    }
    if (resolved !== undefined) {
      const o = resolved.outcome;
      io.out(
        block(io, [
          ["outcome", o.status],
          ["output", o.status === "succeeded" ? JSON.stringify(o.output) : undefined],
          ["job error", o.status === "failed" && o.error !== undefined ? JSON.stringify(o.error) : undefined],
          ["message", o.status === "failed" ? o.message : undefined],
        ]),
      );
      io.out("");
    }
    io.out(renderRun(io, detail, Date.now()));
    return EXIT.ok;
  },
};

export const jobsCommands: readonly Command[] = [list, show, retry];
