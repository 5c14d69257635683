/**
 * @module `taquba jobs show <jobId>`: a typed job (a run on the step queue
 * whose id is the job id): its outcome as its handle would report it, and
 * the run's detail and timeline.
 */
import { readJobOutcome } from "../../../runtime/jobs/job-results.js";
import { readRunDetail } from "../../inspect/run-detail.js";
import { EXIT } from "../exit-codes.js";
import { clean, toJson } from "../output.js";
import type { Command } from "../registry.js";
import { block, renderRun } from "../render.js";

const show: Command = {
  path: ["jobs", "show"],
  operands: "<jobId>",
  arity: [1, 1],
  summary: "a typed job's outcome (output or error) and its run's timeline",
  async run({ io, json, session, operands }) {
    const jobId = operands[0]!;
    const reader = await session.reader();
    const view = await session.view();
    const [detail, outcome] = await Promise.all([readRunDetail(view, reader, jobId), readJobOutcome<unknown, unknown>(view, reader, jobId)]);
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

export const jobsCommands: readonly Command[] = [show];
