/**
 * @module `taquba schedules list|pause|resume|trigger|backfill|remove`: the cron
 * schedules of the owner's step queue with their next and last ticks, read
 * from its durable state, and the commands on one schedule, which the
 * owner applies (on a sharded store, the owner of the schedule's home
 * shard). A command on a schedule that does not exist, or a backfill range
 * that is empty or too long, is refused before anything is written.
 */
import type { QueueReader } from "../../../runtime/queue/reader.js";
import { shardOfSchedule } from "../../../runtime/client/shard-route.js";
import { cronTimes } from "../../../runtime/workflow/schedules/cron-times.js";
import { checkScheduleId, DAMAGED_SCHEDULE_ADVICE } from "../../../runtime/workflow/schedules/schedule-record.js";
import type { ScheduleFire, ScheduleInfo } from "../../../runtime/workflow/schedules/schedule-types.js";
import { MAX_BACKFILL_TICKS, readSchedules, type UnreadableSchedule } from "../../../runtime/workflow/schedules/schedules.js";
import { MAX_INSTANT_MS } from "../../../runtime/time-bounds.js";
import { ScheduleNotFoundError } from "../../../runtime/workflow/workflow-errors.js";
import { EXIT } from "../exit-codes.js";
import { clean, paint, table, toJson, type OperatorIo } from "../output.js";
import { stringOption, UsageError, type Command, type CommandContext } from "../registry.js";
import { NoSuchStoreError, type OperatorSession } from "../session.js";
import { parseSince } from "../since.js";

const iso = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());

/**
 * Every schedule as its deciding runtime stores it. On a sharded store a
 * schedule is read from its home shard only (every shard whose owner
 * registered it holds a copy; only the home shard's copy ticks).
 */
async function allSchedules(session: OperatorSession): Promise<{ schedules: ScheduleInfo[]; unreadable: UnreadableSchedule[] }> {
  const shards = await session.shards();
  const q = session.options.stepQueue;
  if (shards === undefined) return readSchedules(await session.reader(), q, Date.now());
  const schedules: ScheduleInfo[] = [];
  const unreadable: UnreadableSchedule[] = [];
  for (const [i, shard] of shards.entries()) {
    const reader = await readerOrNone(shard);
    if (reader === undefined) continue;
    const read = await readSchedules(reader, q, Date.now());
    for (const s of read.schedules) if (shardOfSchedule(s.id, shards.length) === i) schedules.push(s);
    for (const u of read.unreadable) if (shardOfSchedule(u.id, shards.length) === i) unreadable.push(u);
  }
  return { schedules: schedules.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)), unreadable };
}

/** A shard no owner ever opened has no schedules. */
async function readerOrNone(session: OperatorSession): Promise<QueueReader | undefined> {
  try {
    return await session.reader();
  } catch (e) {
    if (e instanceof NoSuchStoreError) return undefined;
    throw e;
  }
}

/**
 * Schedule `id` as stored, or `ScheduleNotFoundError` (exit 3) before any
 * request is written; its record's `StoreCorruptedError` when that is
 * damaged (`readable: false` takes it as found, for `remove`).
 */
async function existing(session: OperatorSession, id: string): Promise<ScheduleInfo>;
async function existing(session: OperatorSession, id: string, readable: false): Promise<ScheduleInfo | UnreadableSchedule>;
async function existing(session: OperatorSession, id: string, readable = true): Promise<ScheduleInfo | UnreadableSchedule> {
  checkScheduleId(id);
  const shards = await session.shards();
  const home = shards === undefined ? session : shards[shardOfSchedule(id, shards.length)]!;
  const reader = shards === undefined ? await session.reader() : await readerOrNone(home);
  const read = reader === undefined ? undefined : await readSchedules(reader, session.options.stepQueue, Date.now());
  const found = read?.schedules.find((s) => s.id === id);
  if (found !== undefined) return found;
  const damaged = read?.unreadable.find((u) => u.id === id);
  if (damaged !== undefined && !readable) return damaged;
  if (damaged !== undefined) throw damaged.error;
  throw new ScheduleNotFoundError(id);
}

/** What is wrong with a damaged schedule and the way out, in the operator's terms (no stored key). */
function unreadableText(u: UnreadableSchedule): string {
  return `schedule ${clean(u.id)} could not be read: ${clean(u.error.detail)}; ${DAMAGED_SCHEDULE_ADVICE(u.id)}`;
}

const list: Command = {
  path: ["schedules", "list"],
  operands: "",
  arity: [0, 0],
  summary: "cron schedules of the step queue with their next and last ticks, policies and paused state",
  async run({ io, json, session }) {
    const { schedules, unreadable } = await allSchedules(session);
    if (json) {
      io.out(toJson({ schedules, ...(unreadable.length === 0 ? {} : { unreadable: unreadable.map((u) => ({ id: u.id, reason: unreadableText(u) })) }) }));
      return EXIT.ok;
    }
    for (const u of unreadable) io.err(unreadableText(u));
    if (schedules.length === 0) {
      io.out(`no ${unreadable.length === 0 ? "" : "other "}schedules on step queue "${session.options.stepQueue}"`);
      return EXIT.ok;
    }
    const rows = schedules.map((s) => [
      s.id,
      s.cron,
      s.timezone,
      s.paused ? { text: "paused", tone: "warn" as const } : "active",
      iso(s.nextTickMs),
      iso(s.lastTickMs),
      s.lastRunId ?? "-",
      s.overlap,
      typeof s.catchUp === "string" ? s.catchUp : `within ${s.catchUp.allWithinMs} ms`,
    ]);
    io.out(table(io, ["SCHEDULE", "CRON", "TIMEZONE", "STATE", "NEXT TICK", "LAST TICK", "LAST RUN", "OVERLAP", "CATCH-UP"], rows));
    const buffered = schedules.filter((s) => s.bufferedTickMs !== null);
    for (const s of buffered) io.out(paint(io, "dim", `${s.id}: tick ${iso(s.bufferedTickMs)} waits for run ${s.lastRunId} to end`));
    for (const s of schedules) {
      if (s.lastFailure !== null) io.out(paint(io, "bad", `${s.id}: tick ${iso(s.lastFailure.tickMs)} started no run: ${clean(s.lastFailure.error)}`));
    }
    return EXIT.ok;
  },
};

function printInfo(io: OperatorIo, json: boolean, s: ScheduleInfo, verb: string): void {
  if (json) io.out(toJson(s));
  else io.out(`schedule ${clean(s.id)} ${verb}; next tick ${iso(s.nextTickMs)}`);
}

const pause: Command = {
  path: ["schedules", "pause"],
  operands: "<scheduleId>",
  arity: [1, 1],
  summary: "stop deciding the schedule's ticks until resumed (ticks in between are skipped)",
  async run({ io, json, session, operands }) {
    const id = operands[0]!;
    await existing(session, id);
    printInfo(io, json, await (await session.client()).pauseSchedule(id), "paused");
    return EXIT.ok;
  },
};

const resume: Command = {
  path: ["schedules", "resume"],
  operands: "<scheduleId>",
  arity: [1, 1],
  summary: "decide the schedule's ticks again from now on (ticks while paused are not caught up)",
  async run({ io, json, session, operands }) {
    const id = operands[0]!;
    await existing(session, id);
    printInfo(io, json, await (await session.client()).resumeSchedule(id), "resumed");
    return EXIT.ok;
  },
};

const remove: Command = {
  path: ["schedules", "remove"],
  operands: "<scheduleId>",
  arity: [1, 1],
  summary: "delete the schedule (runs it started are left alone); also removes a schedule whose record is damaged",
  async run({ io, json, session, operands }) {
    const id = operands[0]!;
    await existing(session, id, false);
    const removed = await (await session.client()).removeSchedule(id);
    if (json) io.out(toJson({ scheduleId: id, removed }));
    else if (removed) io.out(`schedule ${clean(id)} removed; upsert it again to have it tick`);
    else io.err(`schedule ${clean(id)} was removed before this request reached the owner`);
    return removed ? EXIT.ok : EXIT.refused;
  },
};

const trigger: Command = {
  path: ["schedules", "trigger"],
  operands: "<scheduleId>",
  arity: [1, 1],
  summary: "start one run of the schedule now, outside its cron times and overlap policy",
  async run({ io, json, session, operands }) {
    const id = operands[0]!;
    await existing(session, id);
    const fire = await (await session.client()).triggerSchedule(id);
    io.out(json ? toJson(fire) : `schedule ${clean(id)} started run ${clean(fire.runId)}`);
    return EXIT.ok;
  },
};

/** `--from` / `--to`: an ISO-8601 time or a duration back from now, within the instants the runtime accepts. */
function instantOption(ctx: CommandContext, name: "from" | "to", now: number): number {
  const text = stringOption(ctx, name);
  if (text === undefined) throw new UsageError(`backfill needs --from and --to (ISO-8601 times such as 2026-05-01T00:00:00Z, or 7d, 12h back from now)`);
  let at: number;
  try {
    at = parseSince(text, now, `--${name}`);
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  if (!Number.isFinite(at) || at < 0 || at > MAX_INSTANT_MS)
    throw new UsageError(`--${name} ${JSON.stringify(text)} is outside the dates a schedule can have (1970 on)`);
  return at;
}

const backfill: Command = {
  path: ["schedules", "backfill"],
  operands: "<scheduleId>",
  arity: [1, 1],
  summary: "start the run of every tick in [--from, --to] not started yet, each under the tick's own run id",
  options: {
    from: { type: "string", value: "WHEN", description: "first instant of the range: an ISO-8601 time, or 90s, 15m, 2h, 7d back from now" },
    to: { type: "string", value: "WHEN", description: "last instant of the range (included), in the same forms" },
  },
  async run(ctx) {
    const id = ctx.operands[0]!;
    const now = Date.now();
    const fromMs = instantOption(ctx, "from", now);
    const toMs = instantOption(ctx, "to", now);
    if (toMs < fromMs) throw new UsageError(`--to (${iso(toMs)}) is before --from (${iso(fromMs)}): nothing to backfill`);
    const s = await existing(ctx.session, id);
    // Counted here, so that a range the owner would refuse writes no request.
    const times = cronTimes(`schedule "${id}"`, s.cron, s.timezone);
    let count = 0;
    for (let t = times.next(fromMs - 1); t !== null && t <= toMs; t = times.next(t)) {
      if (++count > MAX_BACKFILL_TICKS)
        throw new UsageError(`the range covers more than ${MAX_BACKFILL_TICKS} ticks of schedule "${clean(id)}" (${s.cron}); split it into shorter ranges`);
    }
    if (count === 0) {
      ctx.io.err(`schedule ${clean(id)} (${s.cron}, ${s.timezone}) has no tick from ${iso(fromMs)} to ${iso(toMs)}: nothing to backfill`);
      return EXIT.refused;
    }
    const fires = await (await ctx.session.client()).backfillSchedule(id, fromMs, toMs);
    printFires(ctx.io, ctx.json, id, fires);
    return EXIT.ok;
  },
};

function printFires(io: OperatorIo, json: boolean, id: string, fires: readonly ScheduleFire[]): void {
  if (json) {
    io.out(toJson({ scheduleId: id, runs: fires }));
    return;
  }
  const started = fires.filter((f) => f.newlySubmitted).length;
  io.out(
    table(
      io,
      ["TICK", "RUN", "STARTED"],
      fires.map((f) => [iso(f.tickMs), clean(f.runId), f.newlySubmitted ? "now" : "already"]),
    ),
  );
  io.out(`schedule ${clean(id)}: ${started} runs started, ${fires.length - started} already started before`);
}

export const scheduleCommands: readonly Command[] = [list, pause, resume, trigger, backfill, remove];
