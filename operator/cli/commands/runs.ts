/**
 * @module `taquba runs list|show|cancel|retry|repair`: the step queue's
 * runs, newest first; one run's detail and timeline; its cancellation, its
 * retry and the repair of its damaged records through the owner.
 */
import { HISTORY_ENTRIES_PER_PAGE } from "../../../runtime/workflow/runs/inspect-run.js";
import type { RunPage, RunRow } from "../../../runtime/workflow/runs/run-listing.js";
import { RUN_LIST_STATES, type RunListState } from "../../../runtime/workflow/runs/run-listing.js";
import { Operations } from "../../inspect/operations.js";
import { RECORD_WORDS, type RepairOutcome } from "../../../runtime/workflow/runs/repair.js";
import { EXIT } from "../exit-codes.js";
import { clean, formatTime, table, toJson, type OperatorIo } from "../output.js";
import { stringOption, UsageError, type Command, type CommandContext, type CommandOption } from "../registry.js";
import { renderRun, stateCell, waitingText } from "../render.js";
import { positiveInt } from "../session.js";
import { parseSince } from "../since.js";

/** Longest error text in a table cell; `runs show` has the whole of it. */
const DETAIL_CELL = 80;

/** Options of run and job listings. */
export const LISTING_OPTIONS: Readonly<Record<string, CommandOption>> = {
  state: { type: "string", value: "STATE", description: RUN_LIST_STATES.join(", ") },
  since: { type: "string", value: "WHEN", description: "only runs submitted since: 90s, 15m, 2h, 7d or an ISO-8601 time" },
  limit: { type: "string", value: "N", description: "most rows (1 to 1000, default 50)" },
  cursor: { type: "string", value: "CURSOR", description: "continue from a previous page (printed at the end of a full page)" },
};

/** The shared listing filters from a command's options. */
export function listingFilters(ctx: CommandContext): { state?: RunListState; submittedAfter?: number; limit?: number; cursor?: string } {
  const state = stringOption(ctx, "state");
  if (state !== undefined && !(RUN_LIST_STATES as readonly string[]).includes(state)) {
    throw new UsageError(`--state takes one of ${RUN_LIST_STATES.join(", ")}, got ${JSON.stringify(state)}`);
  }
  const since = stringOption(ctx, "since");
  const limit = positiveInt("limit", stringOption(ctx, "limit"), 1000);
  const cursor = stringOption(ctx, "cursor");
  return {
    ...(state === undefined ? {} : { state: state as RunListState }),
    ...(since === undefined ? {} : { submittedAfter: parseSince(since, Date.now()) }),
    ...(limit === undefined ? {} : { limit }),
    ...(cursor === undefined ? {} : { cursor }),
  };
}

function detail(r: RunRow): string {
  const text =
    r.error ??
    (r.heldBy !== undefined ? `held: ${waitingText(r.heldBy)}` : undefined) ??
    (r.signal === undefined
      ? r.runAtMs === undefined
        ? ""
        : `due ${formatTime(r.runAtMs)}`
      : `waits for ${r.signal.key} until ${formatTime(r.signal.deadlineMs)}`);
  return text.length > DETAIL_CELL ? `${text.slice(0, DETAIL_CELL - 3)}...` : text;
}

/** A page of runs as a table, then the cursor of the next page. */
export function printRunPage(io: OperatorIo, page: RunPage, json: boolean): void {
  if (json) {
    io.out(toJson(page));
    return;
  }
  if (page.runs.length === 0) io.out("no runs");
  else {
    io.out(
      table(
        io,
        ["RUN", "WORKFLOW", "STATE", "STEP", "ATTEMPT", "SUBMITTED", "UPDATED", "DETAIL"],
        page.runs.map((r) => [
          r.runId,
          r.workflow ?? "-",
          stateCell(r.state),
          r.stepName === undefined ? String(r.step) : `${r.step} ${r.stepName}`,
          String(r.attempt),
          formatTime(r.submittedAtMs),
          formatTime(r.updatedAtMs),
          r.error === undefined ? detail(r) : { text: detail(r), tone: "bad" },
        ]),
      ),
    );
  }
  for (const u of page.unreadable ?? []) io.err(`run ${clean(u.runId)} could not be read: ${clean(u.reason)}`);
  if (page.nextCursor !== undefined) io.out(`\nmore: --cursor ${page.nextCursor}`);
}

const list: Command = {
  path: ["runs", "list"],
  operands: "",
  arity: [0, 0],
  summary: "the step queue's runs, newest first, by state, workflow and submission time",
  options: { ...LISTING_OPTIONS, workflow: { type: "string", value: "NAME", description: "only runs of this typed workflow or job" } },
  async run(ctx) {
    const workflow = stringOption(ctx, "workflow");
    const page = await new Operations(ctx.session).runs({ ...listingFilters(ctx), ...(workflow === undefined ? {} : { workflow }) });
    printRunPage(ctx.io, page, ctx.json);
    return EXIT.ok;
  },
};

/**
 * A step number given as `--<name>`: a whole number from 0, as a page's
 * `historyPage.next` prints it. Its own check: a count's (`positiveInt`)
 * refused "00" and " 0" as not "from 1" though 0 is a step.
 */
function stepNumberOption(name: string, raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n)) {
    throw new UsageError(`--${name} must be a step number, a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

const show: Command = {
  path: ["runs", "show"],
  operands: "<runId>",
  arity: [1, 1],
  summary: "a run's state, headers, error and timeline (attempts, errors with stacks, waits, delays)",
  options: {
    "history-after": {
      type: "string",
      value: "STEP",
      description: `the history entries after this step (one read shows ${HISTORY_ENTRIES_PER_PAGE} of them; historyPage.next names the next step to pass)`,
    },
  },
  async run(ctx) {
    const { io, json, session, operands } = ctx;
    const runId = operands[0]!;
    const raw = stringOption(ctx, "history-after");
    const historyAfter = raw === undefined ? undefined : stepNumberOption("history-after", raw);
    const detail = await new Operations(session).run(runId, undefined, historyAfter);
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
    const status = await (await (await session.forRun(runId)).view()).status(runId);
    if (status === null) {
      io.err(`no record of run ${JSON.stringify(clean(runId))}: nothing to cancel`);
      return EXIT.notFound;
    }
    if (status.state === "terminated") {
      io.err(`run ${JSON.stringify(clean(runId))} already ended (${status.status}): nothing to cancel`);
      return EXIT.refused;
    }
    const { cancelled } = await new Operations(session).cancel(runId);
    if (json) io.out(toJson({ runId, cancelled }));
    else if (cancelled) io.out(`cancellation of run ${clean(runId)} recorded`);
    else io.err(`run ${JSON.stringify(clean(runId))} ended before the cancellation reached it`);
    return cancelled ? EXIT.ok : EXIT.refused;
  },
};

const retry: Command = {
  path: ["runs", "retry"],
  operands: "<runId>",
  arity: [1, 1],
  summary: "re-open a failed or cancelled run at the step it ended at (or --from-step), keeping its memo",
  options: { "from-step": { type: "string", value: "N", description: "re-open at this step, with the payload it last ran with" } },
  async run(ctx) {
    const runId = ctx.operands[0]!;
    const raw = stringOption(ctx, "from-step");
    const fromStep = raw === undefined ? undefined : raw === "0" ? 0 : positiveInt("from-step", raw, Number.MAX_SAFE_INTEGER);
    const out = await new Operations(ctx.session).retryRun(runId, fromStep === undefined ? {} : { fromStep });
    ctx.io.out(ctx.json ? toJson(out) : `run ${clean(out.runId)} re-opened at step ${out.step} (job ${out.jobId})`);
    return EXIT.ok;
  },
};

/** What a repair did (or would do), in words; a dry run's ends with the plan's token, to confirm it with `--plan`. */
export function repairText(out: RepairOutcome): string {
  const text = repairWords(out);
  return out.dryRun ? `${text}\nplan ${out.plan}: confirm this plan with --plan ${out.plan} (refused, nothing written, if the run changed)` : text;
}

function repairWords(out: RepairOutcome): string {
  const damage = out.damaged.map((d) => `its ${RECORD_WORDS[d.record]} is damaged (${d.detail})`).join("; ");
  const id = clean(out.runId);
  if (out.action === "removed") {
    const taken = (out.removed ?? []).map((w) => clean(w)).join("; ");
    return `run ${id}: ${damage === "" ? "its records read" : clean(damage)}\n${out.dryRun ? "dry run, nothing written: the removal would take" : "removed:"} ${taken}`;
  }
  const job = out.stepJobId === undefined ? "" : `, its step job ${clean(out.stepJobId)} ${out.dryRun ? "would be" : "is"} removed (or stopped when running)`;
  const cancelled = out.childrenCancelled ?? [];
  const children =
    cancelled.length === 0
      ? ""
      : `; its children ${cancelled.map((c) => clean(c)).join(", ")}, whose entries were damaged, ${out.dryRun ? "would be" : "are"} cancelled`;
  const did =
    out.action === "ended_failed"
      ? `${out.dryRun ? "would end" : "ended"} failed, saying it was repaired${job}`
      : out.action === "end_rewritten"
        ? `its end record ${out.dryRun ? "would be" : "was"} rewritten: the run ended failed, saying it was repaired${children}`
        : out.action === "records_rewritten"
          ? `keeps its end; its damaged records ${out.dryRun ? "would be" : "were"} rewritten from it${children}`
          : `its listing entry ${out.dryRun ? "would be" : "was"} rewritten; the run itself is not changed`;
  return `run ${id}: ${clean(damage)}\n${out.dryRun ? "dry run, nothing written: the repair" : "repaired: the run"} ${did}`;
}

const repair: Command = {
  path: ["runs", "repair"],
  operands: "<runId>",
  arity: [1, 1],
  summary: "mend a run whose records are damaged: it ends failed, saying it was repaired (through the owner; see --dry-run), or remove it (--remove)",
  options: {
    "dry-run": { type: "boolean", description: "say what the repair would do, writing nothing" },
    remove: {
      type: "boolean",
      description: "remove the run's records instead of keeping it as an ended, failed run (an active run must be damaged, or see --end-active)",
    },
    "end-active": { type: "boolean", description: "with --remove: end an active run whose records read (failed) and remove it" },
    plan: {
      type: "string",
      value: "TOKEN",
      description: "the plan a --dry-run printed (with --remove, a removal's): refused with exit 4, nothing written, when the run no longer gives it",
    },
    "scan-index": {
      type: "boolean",
      description:
        "where no record holds the run's submission time, look for its listing entry through the whole run listing (one listing read per 1,000 runs)",
    },
  },
  async run(ctx) {
    const runId = ctx.operands[0]!;
    const plan = stringOption(ctx, "plan");
    const out = await new Operations(ctx.session).repair(runId, {
      dryRun: ctx.options["dry-run"] === true,
      scanIndex: ctx.options["scan-index"] === true,
      remove: ctx.options["remove"] === true,
      endActive: ctx.options["end-active"] === true,
      ...(plan === undefined ? {} : { plan }),
    });
    ctx.io.out(ctx.json ? toJson(out) : repairText(out));
    return EXIT.ok;
  },
};

export const runsCommands: readonly Command[] = [list, show, cancel, retry, repair];
