/**
 * @module `taquba runs show|cancel`: one run's detail and timeline, and
 * its cancellation through the owner.
 */
import { readRunDetail } from "../../inspect/run-detail.js";
import { EXIT } from "../exit-codes.js";
import { clean, toJson } from "../output.js";
import type { Command } from "../registry.js";
import { renderRun } from "../render.js";

const show: Command = {
  path: ["runs", "show"],
  operands: "<runId>",
  arity: [1, 1],
  summary: "a run's state, headers, error and timeline (attempts, errors with stacks, waits, delays)",
  async run({ io, json, session, operands }) {
    const runId = operands[0]!;
    const reader = await session.reader();
    const detail = await readRunDetail(await session.view(), reader, runId);
    if (detail === null) {
      io.err(`no record of run ${JSON.stringify(clean(runId))}: it was never submitted to this step queue, or it ended and was swept`);
      return EXIT.notFound;
    }
    io.out(json ? toJson(detail) : renderRun(io, detail, Date.now()));
    return EXIT.ok;
  },
};

const cancel: Command = {
  path: ["runs", "cancel"],
  operands: "<runId>",
  arity: [1, 1],
  summary: "request the run's cancellation (the owner applies it; a running step sees it when it settles)",
  async run({ io, json, session, operands }) {
    const runId = operands[0]!;
    const status = await (await session.view()).status(runId);
    if (status === null) {
      io.err(`no record of run ${JSON.stringify(clean(runId))}: nothing to cancel`);
      return EXIT.notFound;
    }
    if (status.state === "terminated") {
      io.err(`run ${JSON.stringify(clean(runId))} already ended (${status.status}): nothing to cancel`);
      return EXIT.refused;
    }
    const done = await (await session.client()).cancel(runId);
    if (json) io.out(toJson({ runId, cancelled: done }));
    else if (done) io.out(`cancellation of run ${clean(runId)} recorded`);
    else io.err(`run ${JSON.stringify(clean(runId))} ended before the cancellation reached it`);
    return done ? EXIT.ok : EXIT.refused;
  },
};

export const runsCommands: readonly Command[] = [show, cancel];
