/**
 * @module `runtime.schedules`: cron schedules that start runs, and the loop
 * that decides their ticks.
 *
 * Exactly once per tick: a tick's run id is derived from the schedule and
 * the tick time, and the schedule's state (the last decided tick) commits
 * with that run's submission, so a crash before the commit redoes the
 * tick under the same id and one after it never sees the tick again,
 * whichever process owns the store next. The loop sleeps on the runtime's
 * clock until the next tick (or a change, or the end of a run a buffered
 * tick waits for); nothing polls.
 */
import { ConstructionGate } from "../../internal-construction.js";
import { SettlementEffects } from "../../queue/effects.js";
import type { KvPage, KvScanOptions } from "../../queue/view.js";
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import { MAX_INSTANT_MS, validateInstant } from "../../time-bounds.js";
import type { RuntimeCore } from "../runtime-core.js";
import type { RunDebounce, RunFlow, RunOptions, RunSpec, SubmitOutcome } from "../runs/run-types.js";
import { readRunOptions } from "../runs/run-option-fields.js";
import { KeyedLock } from "../runs/run-events.js";
import { backoffMs, isStoreFault, sleep, STORE_RETRY } from "../store-retry.js";
import { bytesEqual } from "../../store/bytes-equal.js";
import { cronTimes, type CronTimes } from "./cron-times.js";
import {
  checkScheduleId,
  checkScheduleSpec,
  readScheduleSpec,
  DAMAGED_SCHEDULE_ADVICE,
  decodeScheduleRecord,
  encodeScheduleRecord,
  scheduleKey,
  schedulesPrefix,
  tickJitterMs,
  tickRunId,
  triggerRunId,
  type ScheduleRecord,
} from "./schedule-record.js";
import type { ComputedTickRun, ScheduleFire, ScheduleInfo, ScheduleInputHandler, ScheduleSpec } from "./schedule-types.js";
import { planTicks } from "./tick-plan.js";
import { listTicks } from "./backfill-ticks.js";
import { RemoteRunsUnavailable, type ScheduleRouting } from "./schedule-routing.js";
import { markEffects, type AppliedMark } from "../records/applied-mark.js";
import { InputMismatchError, ScheduleInputError, ScheduleNotFoundError } from "../workflow-errors.js";
import { checkRunPayload } from "../limits.js";
import { checkRunOptions } from "../runs/submit.js";
import { describeValue, isOptionBytes, isOptionObject, optionFields, readExactOptions } from "../../option-values.js";

/** How soon a tick whose run lives on a shard that did not answer is decided again. */
export const REMOTE_RETRY_MS = 5_000;
/** How often a buffered tick waiting for a run on another shard looks whether that run ended (no event crosses shards). */
export const REMOTE_RECHECK_MS = 5_000;

/** Most run ids a trigger passes over that a removed schedule of the same id used in the same millisecond. */
const MAX_TRIGGERS_PER_MS = 1_000;

/** How long a schedule's input handler may take for one tick by default (`WorkflowRuntimeBuilder.scheduleInputTimeout`). */
export const DEFAULT_SCHEDULE_INPUT_TIMEOUT_MS = 30_000;
const TIMED_OUT: unique symbol = Symbol("timed out");
const STOPPED: unique symbol = Symbol("stopped");

/** The scheduler stopped while a tick's input was being computed: the tick is decided at the next start. */
class SchedulerStopped extends Error {
  constructor() {
    super("the scheduler stopped while a schedule's input handler was computing a tick's input");
    this.name = "SchedulerStopped";
  }
}

/** Most ticks one `backfill` call starts; a longer range is refused (split it). */
export const MAX_BACKFILL_TICKS = 10_000;
/** Most ticks one backfill request of a client starts: the owner answers after each part, so none holds it long. */
export const BACKFILL_PART_TICKS = 25;
/** Most ticks a client may ask one part to start. */
export const MAX_BACKFILL_PART_TICKS = 1_000;
/** After this long on the runtime's clock a backfill part answers with what it started (a tick on another shard is a round trip). */
export const BACKFILL_PART_BUDGET_MS = 10_000;

/** What one part of a backfill started, and where the next part starts (null: the range is done). */
export interface BackfillPart {
  readonly fires: readonly ScheduleFire[];
  readonly nextFromMs: number | null;
}

/** What the schedules need from their runtime. */
export interface ScheduleHost {
  readonly core: RuntimeCore;
  /** Submits a run, committing `effects` with it when it is new. */
  submit(spec: RunSpec, effects: SettlementEffects): Promise<SubmitOutcome>;
  /** Whether the run exists and has not terminated. */
  isActive(runId: string): Promise<boolean>;
  /** Whether the runtime has any record of the run (active, or terminated and not yet swept). */
  isKnown(runId: string): Promise<boolean>;
  /** How long an input handler may take for one tick; default {@link DEFAULT_SCHEDULE_INPUT_TIMEOUT_MS}. */
  readonly inputTimeoutMs?: number;
}

/** When to look at a schedule again, and which run's end a buffered tick waits for. */
interface Decision {
  readonly nextTickMs: number | null;
  readonly waitFor: string | null;
}

/** Schedules of one queue share a lock per schedule, even across runtimes over it (see runtime-core). */
const locks = new WeakMap<object, KeyedLock>();
/** In-process wake-ups of the scheduler loops of one queue after a schedule changed. */
const changes = new WeakMap<object, Set<() => void>>();

/** `new Schedules` is internal: read runtime.schedules (see internal-construction.ts). */
export const SCHEDULES_GATE = new ConstructionGate("Schedules", "read runtime.schedules");

/**
 * The schedules of one runtime's step queue. Every method reads and writes
 * the durable records, so each works from any runtime over the same step
 * queue; ticks are decided by `runtime.run` (a worker) only.
 */
export class Schedules {
  readonly #host: ScheduleHost;
  readonly #lock: KeyedLock;
  readonly #times = new Map<string, CronTimes>();
  /**
   * The last backfill range checked per schedule (by its expression): a
   * client sends a long range as parts with the same end and later starts,
   * each within the range already checked, so only the first counts the
   * whole range (counting it again per part made a backfill quadratic).
   */
  readonly #checkedRanges = new Map<string, { times: string; fromMs: number; toMs: number }>();
  #routing: ScheduleRouting | undefined;
  /** Input handlers of the schedules upserted in this process, by id. */
  readonly #handlers = new Map<string, ScheduleInputHandler>();
  #started = false;
  /** Aborts when the scheduler loop stops: a handler still computing is not waited for. */
  #stopped: AbortSignal | undefined;

  /** @internal Built by the runtime. */
  constructor(host: ScheduleHost) {
    SCHEDULES_GATE.check();
    this.#host = host;
    const q = host.core.queue;
    let l = locks.get(q);
    if (l === undefined) {
      l = new KeyedLock();
      locks.set(q, l);
    }
    this.#lock = l;
  }

  get #core(): RuntimeCore {
    return this.#host.core;
  }

  /**
   * @internal Routes this runtime's schedules on a sharded deployment (see
   * `routeShardSchedules`): it decides only the schedules homed on its
   * shard, and starts each tick's run on the run's own shard. Set before
   * the worker starts.
   */
  routeBy(routing: ScheduleRouting): void {
    if (this.#started) throw new ValidationError("schedule routing must be set before the runtime's worker starts (run / spawn)");
    this.#routing = routing;
  }

  /** Refuses a command on a schedule another shard decides: its state there is the one that counts. */
  #checkHome(id: string): void {
    if (this.#routing !== undefined && !this.#routing.decides(id)) {
      throw new ValidationError(
        `schedule "${id}" is decided on another shard (its home shard); pause, resume, trigger and backfill it through a TaqubaClient, which sends the command there`,
      );
    }
  }

  /** Whether the run exists and has not terminated, on whichever shard holds it. */
  async #isActive(runId: string): Promise<boolean> {
    const remote = this.#routing?.runsOf(runId);
    if (remote === undefined) return this.#host.isActive(runId);
    const st = await reach(runId, () => remote.status(runId));
    return st !== null && st.state !== "terminated";
  }

  /** Whether any shard's runtime has a record of the run. */
  async #isKnown(runId: string): Promise<boolean> {
    const remote = this.#routing?.runsOf(runId);
    if (remote === undefined) return this.#host.isKnown(runId);
    return (await reach(runId, () => remote.status(runId))) !== null;
  }

  /**
   * Submits a run on its shard. On this runtime's own shard `effects` (the
   * schedule's new state) commit with it; on another, the caller writes
   * them after the run's owner accepted it (a crash in between decides the
   * tick again, and finds its run).
   */
  async #submit(spec: RunSpec & { runId: string }, effects: SettlementEffects): Promise<{ outcome: SubmitOutcome; committed: boolean }> {
    const remote = this.#routing?.runsOf(spec.runId);
    if (remote === undefined) return { outcome: await this.#host.submit(spec, effects), committed: true };
    return { outcome: await reach(spec.runId, () => remote.submit(spec)), committed: false };
  }

  /**
   * Creates or updates a schedule. An update of the definition keeps the
   * state (last tick, paused); the same definition again changes nothing.
   * A new schedule's first tick is the first after now. On a shard (routed),
   * a schedule another shard decides is refused with a `ValidationError`
   * and nothing is written or registered: a copy here would never tick
   * ({@link Schedules.decides} tells which; `upsertSchedules` registers
   * only those).
   */
  async upsert(given: ScheduleSpec): Promise<ScheduleInfo> {
    const spec = readScheduleSpec(given);
    const def = checkScheduleSpec(spec);
    if (!this.decides(def.id)) {
      throw new ValidationError(
        `schedule "${def.id}" is decided on another shard (its home shard), so this shard's runtime does not keep it; ` +
          "upsert it on every shard's runtime with upsertSchedules, which registers each schedule on its home shard only, or skip the schedules for which runtime.schedules.decides(id) is false",
      );
    }
    // The handler lives in this process; the record says only that there is one.
    if (typeof spec.run.input === "function") this.#handlers.set(def.id, spec.run.input);
    else this.#handlers.delete(def.id);
    const record = await this.#locked(def.id, async (current) => {
      if (current !== null && current.definitionSha256 === def.definitionSha256) return current;
      const base: Pick<ScheduleRecord, "paused" | "lastTickMs" | "ticked" | "lastRunId" | "bufferedTickMs" | "lastTrigger"> = current ?? {
        paused: false,
        lastTickMs: this.#core.clock.now(),
        ticked: false,
        lastRunId: null,
        bufferedTickMs: null,
      };
      const next: ScheduleRecord = {
        ...def,
        paused: base.paused,
        lastTickMs: base.lastTickMs,
        ticked: base.ticked,
        lastRunId: base.lastRunId,
        bufferedTickMs: base.bufferedTickMs,
        ...(base.lastTrigger === undefined ? {} : { lastTrigger: base.lastTrigger }),
      };
      await this.#write(current, next);
      return next;
    });
    this.#announce();
    return this.#info(record);
  }

  /**
   * Every schedule of the step queue with its next and last ticks, by id.
   * On a shard (routed), only the schedules homed there: the copy another
   * shard's runtime keeps has a state no one updates.
   *
   * A schedule whose stored record is damaged is left out, logged, and
   * reported in the listing's `unreadable` (a `StoreCorruptedError` naming
   * it and the way out): one damaged record does not hide the others, as
   * it does not stop them ticking.
   */
  async list(): Promise<ScheduleList> {
    const { schedules, unreadable } = await readSchedules(this.#core.queue, this.#core.queueName, this.#core.clock.now(), (id) => this.#isHome(id));
    for (const u of unreadable) this.#core.log.error({ err: u.error, schedule: u.id }, `schedules.list left out schedule "${u.id}": ${u.error.message}`);
    return scheduleList(schedules, unreadable);
  }

  /** One schedule, or null (also on a shard that is not the schedule's home: ask a TaqubaClient). */
  async get(id: string): Promise<ScheduleInfo | null> {
    if (!this.#isHome(id)) return null;
    const r = await this.#read(id);
    return r === null ? null : this.#info(r);
  }

  /**
   * Whether this runtime decides the ticks of schedule `id`: always, unless
   * it runs one shard of a sharded store (`routeShardSchedules`), where only
   * the runtime of the schedule's home shard does.
   */
  decides(id: string): boolean {
    return this.#isHome(id);
  }

  /** Whether this runtime decides schedule `id` (always, unless routed to shards). */
  #isHome(id: string): boolean {
    return this.#routing === undefined || this.#routing.decides(id);
  }

  /** Stops deciding ticks until `resume`; ticks in between are skipped. Idempotent. */
  async pause(id: string): Promise<ScheduleInfo> {
    this.#checkHome(checkScheduleId(id));
    const r = await this.#locked(checkScheduleId(id), async (current) => {
      const c = requireRecord(id, current);
      if (c.paused) return c;
      const next = { ...c, paused: true };
      await this.#write(c, next);
      return next;
    });
    this.#announce();
    return this.#info(r);
  }

  /** Decides ticks again from now on: ticks while paused are not caught up. Idempotent. */
  async resume(id: string): Promise<ScheduleInfo> {
    this.#checkHome(checkScheduleId(id));
    const r = await this.#locked(checkScheduleId(id), async (current) => {
      const c = requireRecord(id, current);
      if (!c.paused) return c;
      const next = { ...c, paused: false, lastTickMs: Math.max(c.lastTickMs, this.#core.clock.now()) };
      await this.#write(c, next);
      return next;
    });
    this.#announce();
    return this.#info(r);
  }

  /**
   * Deletes a schedule; `false` when there was none. Runs it started are not
   * touched. On a shard (routed), a schedule another shard decides is
   * refused with a `ValidationError` and nothing is deleted: deleting a copy
   * here would leave the home shard ticking it.
   */
  async remove(id: string): Promise<boolean> {
    checkScheduleId(id);
    if (!this.decides(id)) {
      throw new ValidationError(
        `schedule "${id}" is decided on another shard (its home shard), so removing it here would not stop its ticks; ` +
          "remove it on the runtime of its home shard (the one whose runtime.schedules.decides(id) is true)",
      );
    }
    // Without decoding the record: a damaged one is removed too (the way out the scheduler's report names).
    const key = scheduleKey(this.#core.queueName, id);
    const removed = await this.#lock.run(`${this.#core.queueName}/${id}`, async () => {
      if ((await this.#core.queue.kvGet(key)) === null) return false;
      await this.#core.queue.kvDelete(key);
      return true;
    });
    this.#handlers.delete(id);
    this.#announce();
    return removed;
  }

  /**
   * Starts one run now (no jitter), outside the cron times and the overlap
   * policy, paused or not. Each call starts its own run, also several in
   * the same millisecond (see `triggerRunId`).
   */
  trigger(id: string): Promise<ScheduleFire> {
    return this.triggerMarked(id);
  }

  /**
   * @internal `trigger` for the client inbox: `atMs` is the request's time, and `mark` commits with
   * the schedule's new state (with the run, on the run's own shard), so a replayed request answers
   * as the first time; one replayed before the state was written names the same run again.
   */
  async triggerMarked(id: string, mark?: AppliedMark<ScheduleFire>, atMs?: number): Promise<ScheduleFire> {
    this.#checkHome(checkScheduleId(id));
    return this.#locked(id, async (current) => {
      const c = requireRecord(id, current);
      const now = atMs ?? this.#core.clock.now();
      // The state counts the triggers of this millisecond: the next one names the next run.
      let nth = c.lastTrigger?.atMs === now ? c.lastTrigger.count + 1 : 1;
      // A run id an earlier trigger used (of this millisecond before a later one, or of a schedule removed and
      // created again) is passed over. Only a request whose run goes to another shard may be a replay that
      // lost its state write (on this shard its mark commits with the run): it keeps the id it names.
      for (; nth < MAX_TRIGGERS_PER_MS; nth++) {
        const candidate = triggerRunId(id, now, nth);
        if (mark !== undefined && this.#routing?.runsOf(candidate) !== undefined) break;
        if (!(await this.#isKnown(candidate))) break;
      }
      const runId = triggerRunId(id, now, nth);
      const next: ScheduleRecord = { ...c, lastRunId: runId, lastTrigger: { atMs: now, count: nth } };
      const fire = { tickMs: now, runId, newlySubmitted: true };
      const effects = this.#stateWrite(next);
      if (mark !== undefined) markEffects(mark, fire, effects);
      const { outcome: out, committed } = await unreached(this.#submit({ ...(await this.#runSpec(c, runId, now, "trigger")), runId }, effects));
      if (out.newlySubmitted && committed) return fire;
      // The run was on another shard, or existed already (a replay whose state write was lost): the state and the answer in one commit.
      const answer = out.newlySubmitted ? fire : { ...fire, newlySubmitted: false };
      const after = this.#stateWrite(next);
      if (mark !== undefined) markEffects(mark, answer, after);
      await this.#core.queue.kvCompareAndApply([], after);
      return answer;
    });
  }

  /**
   * Starts the run of every tick in `[fromMs, toMs]`, with the tick's own
   * run id; a tick whose run the runtime still knows (active, or ended and
   * not yet swept by memo retention) is not started again,
   * regardless of pause and overlap. Leaves the schedule's state alone.
   * Refuses a range of more than {@link MAX_BACKFILL_TICKS} ticks.
   */
  async backfill(id: string, fromMs: number, toMs: number): Promise<ScheduleFire[]> {
    return [...(await this.#backfill(id, fromMs, toMs, MAX_BACKFILL_TICKS, Number.POSITIVE_INFINITY)).fires];
  }

  /**
   * @internal One part of a backfill for the client inbox: the ticks of
   * `[fromMs, toMs]` from the first on, at most `maxTicks` of them, and no
   * more once `budgetMs` passed on the runtime's clock (at least one), so
   * no request holds the owner long. `nextFromMs` is where the next part
   * starts; null when the range is done. The whole range is checked (at
   * most {@link MAX_BACKFILL_TICKS} ticks) before anything starts. A part
   * applied again starts nothing twice (see `backfill`).
   */
  backfillPart(id: string, fromMs: number, toMs: number, maxTicks: number, budgetMs = BACKFILL_PART_BUDGET_MS): Promise<BackfillPart> {
    return this.#backfill(id, fromMs, toMs, maxTicks, budgetMs);
  }

  async #backfill(id: string, fromMs: number, toMs: number, maxTicks: number, budgetMs: number): Promise<BackfillPart> {
    this.#checkHome(checkScheduleId(id));
    validateInstant("backfill's fromMs", fromMs);
    validateInstant("backfill's toMs", toMs);
    if (toMs < fromMs) throw new ValidationError(`backfill's toMs (${toMs}) is before its fromMs (${fromMs})`);
    const c = requireRecord(id, await this.#read(id));
    const times = this.#timesOf(c);
    const timesKey = `${c.timezone} ${c.cron}`;
    const checked = this.#checkedRanges.get(id);
    // Within a range checked before: its ticks are no more than that one's, so list only this part's (and one past it).
    const within = checked !== undefined && checked.times === timesKey && checked.toMs === toMs && checked.fromMs <= fromMs;
    const most = within ? Math.min(MAX_BACKFILL_TICKS, maxTicks + 1) : MAX_BACKFILL_TICKS;
    // A few ticks per turn of the loop: the whole range's check holds the owner for seconds for a sparse expression.
    const { ticks, more } = await listTicks(times, fromMs, toMs, most);
    if (more && !within) throw new ValidationError(`backfill of schedule "${id}" covers more than ${MAX_BACKFILL_TICKS} ticks; split the range`);
    if (!within) {
      // Bounded by the schedules backfilled since the last clear.
      if (this.#checkedRanges.size >= 1024) this.#checkedRanges.clear();
      this.#checkedRanges.set(id, { times: timesKey, fromMs, toMs });
    }
    const clock = this.#core.clock;
    const endMs = clock.now() + budgetMs;
    const fires: ScheduleFire[] = [];
    for (const t of ticks) {
      if (fires.length > 0 && (fires.length >= maxTicks || clock.now() >= endMs)) return { fires, nextFromMs: t };
      const runId = tickRunId(id, t);
      if (await unreached(this.#isKnown(runId))) {
        fires.push({ tickMs: t, runId, newlySubmitted: false });
        continue;
      }
      const { outcome: r } = await unreached(this.#submit({ ...(await this.#runSpec(c, runId, t, "backfill")), runId }, new SettlementEffects()));
      fires.push({ tickMs: t, runId, newlySubmitted: r.newlySubmitted });
    }
    return { fires, nextFromMs: null };
  }

  /**
   * @internal The scheduler loop, run by `runtime.run` until `signal`
   * aborts: decides every due tick, then sleeps until the next one.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.#started = true;
    this.#stopped = signal;
    const core = this.#core;
    let faults = 0;
    const aborted = abortOf(signal);
    while (!signal.aborted) {
      const woken = this.#changed();
      const waits: { promise: Promise<void>; dispose: () => void }[] = [];
      const tick = new AbortController();
      let wakeAt = Number.POSITIVE_INFINITY;
      try {
        try {
          // By id: each record is read (and a damaged one found) under its schedule's lock in #decide.
          for await (const id of scheduleIds(core.queue, core.queueName)) {
            if (signal.aborted) return;
            // Every shard may hold a copy of the schedule; only its home shard decides its ticks.
            if (this.#routing !== undefined && !this.#routing.decides(id)) continue;
            let s: Decision | null;
            try {
              s = await this.#decide(id);
            } catch (e) {
              if (e instanceof RemoteRunsUnavailable && !core.queue.closed) {
                // Only this schedule waits for that shard; the others are decided meanwhile.
                core.log.error(
                  { err: e.cause, schedule: id, runId: e.runId },
                  `schedule "${id}": the shard of run "${e.runId}" did not answer; the tick is decided again in ${REMOTE_RETRY_MS} ms`,
                );
                wakeAt = Math.min(wakeAt, core.clock.now() + REMOTE_RETRY_MS);
                continue;
              }
              if (signal.aborted || e instanceof SchedulerStopped) return;
              if (isStoreFault(e) || core.queue.closed) throw e;
              // One broken schedule (a corrupted record, an input the runtime refuses) must not stop the others.
              const todo =
                e instanceof StoreCorruptedError
                  ? "its stored record is damaged: remove it (schedules.remove) and upsert it again"
                  : "it is tried again at the next change or start";
              core.log.error({ err: e, schedule: id }, `schedule "${id}" could not decide its ticks; ${todo}`);
              continue;
            }
            if (s === null) continue;
            if (s.nextTickMs !== null) wakeAt = Math.min(wakeAt, s.nextTickMs);
            // The end of a run on another shard raises no event here: look again after a while.
            if (s.waitFor !== null && this.#routing?.runsOf(s.waitFor) !== undefined) wakeAt = Math.min(wakeAt, core.clock.now() + REMOTE_RECHECK_MS);
            else if (s.waitFor !== null) waits.push(core.events.next(s.waitFor));
          }
          faults = 0;
        } catch (e) {
          if (core.queue.closed) return;
          if (!isStoreFault(e)) throw e;
          core.log.error({ err: e }, "the scheduler could not read or write a schedule (store fault); trying again shortly");
          await sleep(backoffMs(STORE_RETRY, ++faults), signal).catch(() => undefined);
          continue;
        }
        if (signal.aborted) return;
        const sleeps: Promise<unknown>[] = [woken.promise, ...waits.map((w) => w.promise), aborted];
        if (wakeAt !== Number.POSITIVE_INFINITY) sleeps.push(core.clock.waitUntil(wakeAt, tick.signal).catch(() => undefined));
        await Promise.race(sleeps);
      } finally {
        woken.dispose();
        for (const w of waits) w.dispose();
        tick.abort();
      }
    }
  }

  /**
   * Decides the due ticks of one schedule (and a buffered tick whose
   * previous run ended). Returns when to look again and which run's end to
   * wait for; null when the schedule is gone.
   */
  #decide(id: string): Promise<Decision | null> {
    return this.#locked(id, async (current) => {
      if (current === null) return null;
      let r = current;
      const times = this.#timesOf(r);
      if (!r.paused && r.bufferedTickMs !== null && !(r.lastRunId !== null && (await this.#isActive(r.lastRunId)))) {
        r = await this.#fire(r, r.bufferedTickMs, { bufferedTickMs: null });
      }
      if (!r.paused) {
        for (;;) {
          const plan = planTicks(times, r.lastTickMs, this.#core.clock.now(), r.catchUp);
          if (plan.decidedThrough === null) break;
          for (const t of plan.fire) r = await this.#tick(r, t);
          if (r.lastTickMs < plan.decidedThrough) {
            const next = { ...r, lastTickMs: plan.decidedThrough, ticked: true };
            await this.#write(r, next);
            r = next;
          }
        }
      }
      const waitFor = r.bufferedTickMs !== null ? r.lastRunId : null;
      return { nextTickMs: r.paused ? null : times.next(r.lastTickMs), waitFor };
    });
  }

  /** Decides one tick by the overlap policy. */
  async #tick(r: ScheduleRecord, tickMs: number): Promise<ScheduleRecord> {
    if (r.overlap !== "allow" && r.lastRunId !== null && (await this.#isActive(r.lastRunId))) {
      const buffered = r.overlap === "buffer_one" && r.bufferedTickMs === null ? tickMs : r.bufferedTickMs;
      const next = { ...r, lastTickMs: tickMs, ticked: true, bufferedTickMs: buffered };
      if (r.overlap === "skip")
        this.#core.log.info({ schedule: r.id, tickMs, running: r.lastRunId }, `schedule "${r.id}" skipped a tick: its previous run is still active`);
      await this.#write(r, next);
      return next;
    }
    return this.#fire(r, tickMs, { lastTickMs: Math.max(r.lastTickMs, tickMs), ticked: true });
  }

  /** Starts the run of `tickMs`, committing the schedule's new state with it. */
  async #fire(r: ScheduleRecord, tickMs: number, change: Partial<ScheduleRecord>): Promise<ScheduleRecord> {
    const runId = tickRunId(r.id, tickMs);
    const next: ScheduleRecord = { ...r, ...change, lastRunId: runId };
    let newlySubmitted = false;
    try {
      // A run the runtime still knows under the tick's id (a backfill ran it) is that tick's run: never a second one.
      if (!(await this.#isKnown(runId))) {
        const { outcome, committed } = await this.#submit({ ...(await this.#runSpec(r, runId, tickMs)), runId }, this.#stateWrite(next));
        // On another shard the state is written below, after the run's owner accepted it.
        newlySubmitted = outcome.newlySubmitted && committed;
      }
    } catch (e) {
      if (e instanceof ScheduleInputError) {
        // Recorded, not skipped in silence: the schedule shows the failed tick, and a backfill over it runs it once fixed.
        this.#core.log.error({ err: e.cause ?? e, schedule: r.id, tickMs }, e.message);
        const failed: ScheduleRecord = { ...r, ...change, lastFailure: { tickMs, error: e.message } };
        await this.#write(r, failed);
        return failed;
      }
      if (!(e instanceof InputMismatchError)) throw e;
      // The tick's run exists with another input (a backfill before the schedule's input changed): it is that tick's run.
      this.#core.log.warn?.({ schedule: r.id, runId }, `schedule "${r.id}": the run of tick ${tickMs} already exists with another input; keeping it`);
      newlySubmitted = false;
    }
    // A duplicate (the run exists: a backfill, or an earlier attempt whose state write was lost) still advances the state.
    if (!newlySubmitted) await this.#write(r, next);
    return next;
  }

  /**
   * The run of a tick: a scheduled tick is jittered and debounced as the
   * schedule says; a backfilled tick is jittered only (each tick of the
   * range runs); a trigger is neither.
   */
  async #runSpec(r: ScheduleRecord, runId: string, tickMs: number, kind: "tick" | "trigger" | "backfill" = "tick"): Promise<RunSpec> {
    const jitter = kind === "trigger" ? 0 : tickJitterMs(r.id, tickMs, r.jitterMs);
    const computed = r.computed === true ? await this.#computeInput(r.id, tickMs) : undefined;
    const flow = computed?.flow ?? r.flow;
    const debounce = kind === "tick" ? (computed?.debounce ?? r.debounce) : undefined;
    if (debounce !== undefined && jitter !== 0) {
      throw new ScheduleInputError(r.id, tickMs, "its input handler gave a debounce, which cannot be combined with the schedule's jitterMs");
    }
    return {
      input: computed?.input ?? r.input,
      runId,
      options: {
        headers: r.headers,
        ...(r.priority === undefined ? {} : { priority: r.priority }),
        ...(r.maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep: r.maxAttemptsPerStep }),
        ...(flow === undefined ? {} : { flow }),
        ...(debounce === undefined ? {} : { debounce }),
        // A tick near the last instant a Date holds is jittered no further than it.
        ...(jitter === 0 ? {} : { runAt: Math.min(tickMs + jitter, MAX_INSTANT_MS) }),
      },
    };
  }

  /** The input of a tick from the schedule's handler; `ScheduleInputError` when there is none, it throws or its answer is not a run input. */
  async #computeInput(id: string, tickMs: number): Promise<ComputedTickRun> {
    const handler = this.#handlers.get(id);
    if (handler === undefined) {
      throw new ScheduleInputError(id, tickMs, "its input handler is not registered in this process (upsert the schedule with its handler at every start)");
    }
    let answer: unknown;
    const timeoutMs = this.#host.inputTimeoutMs ?? DEFAULT_SCHEDULE_INPUT_TIMEOUT_MS;
    const timer = new AbortController();
    // The handler's own signal: its work is abandoned at the timeout or when the scheduler stops, so it may stop too.
    const handlerAbort = new AbortController();
    let stop: (() => void) | undefined;
    const stopping = this.#stopped;
    try {
      // A handler that never settles must not hold the scheduler (every schedule of this runtime waits for it).
      const timedOut = this.#core.clock.waitUntil(this.#core.clock.now() + timeoutMs, timer.signal).then(
        () => TIMED_OUT,
        () => TIMED_OUT,
      );
      const stopped =
        stopping === undefined
          ? []
          : [
              new Promise<typeof STOPPED>((resolve) => {
                stop = () => resolve(STOPPED);
                if (stopping.aborted) stop();
                else stopping.addEventListener("abort", stop, { once: true });
              }),
            ];
      answer = await Promise.race([Promise.resolve().then(() => handler({ scheduleId: id, tickMs, signal: handlerAbort.signal })), timedOut, ...stopped]);
    } catch (e) {
      // A typed handler's own refusal (an input its target rejects) already says what was wrong.
      if (e instanceof ScheduleInputError) throw e;
      throw new ScheduleInputError(id, tickMs, `its input handler threw: ${e instanceof Error ? e.message : String(e)}`, e);
    } finally {
      timer.abort();
      // One listener per computed input, removed: a long-running scheduler does not gather them.
      if (stop !== undefined) stopping?.removeEventListener("abort", stop);
      if (answer === TIMED_OUT) {
        handlerAbort.abort(new DOMException(`schedule "${id}": the input handler did not answer within ${timeoutMs} ms`, "TimeoutError"));
      } else if (answer === STOPPED) {
        handlerAbort.abort(new DOMException(`schedule "${id}": the scheduler stopped while the input handler computed a tick's input`, "AbortError"));
      }
    }
    if (answer === STOPPED) throw new SchedulerStopped();
    if (answer === TIMED_OUT) {
      throw new ScheduleInputError(
        id,
        tickMs,
        `its input handler did not answer within ${timeoutMs} ms (WorkflowRuntimeBuilder.scheduleInputTimeout); the tick started no run`,
      );
    }
    let run: ComputedTickRun | undefined;
    try {
      run = computedRunOf(answer);
      if (run !== undefined) {
        checkRunPayload(`the input of schedule "${id}"`, run.input);
        // Refused here, naming the answer: a misspelt field would leave the schedule's own flow or debounce in force.
        if (run.flow !== undefined || run.debounce !== undefined) checkRunOptions({ flow: run.flow, debounce: run.debounce }, "answer");
      }
    } catch (e) {
      throw new ScheduleInputError(id, tickMs, e instanceof Error ? e.message : String(e));
    }
    if (run === undefined) {
      throw new ScheduleInputError(
        id,
        tickMs,
        `its input handler returned ${answer === null ? "null" : typeof answer}, not a Uint8Array or { input: Uint8Array, flow?, debounce? }`,
      );
    }
    return run;
  }

  #stateWrite(next: ScheduleRecord): SettlementEffects {
    return new SettlementEffects().kvPut(scheduleKey(this.#core.queueName, next.id), encodeScheduleRecord(next));
  }

  async #write(current: ScheduleRecord | null, next: ScheduleRecord): Promise<void> {
    const key = scheduleKey(this.#core.queueName, next.id);
    const bytes = encodeScheduleRecord(next);
    if (current !== null && bytesEqual(bytes, encodeScheduleRecord(current))) return;
    await this.#core.queue.kvPut(key, bytes);
  }

  #timesOf(r: ScheduleRecord): CronTimes {
    const k = `${r.timezone} ${r.cron}`;
    let t = this.#times.get(k);
    if (t === undefined) {
      t = cronTimes(`schedule "${r.id}"`, r.cron, r.timezone);
      // Bounded by the distinct expressions of the queue's schedules; cleared if that grows past reason.
      if (this.#times.size >= 1024) this.#times.clear();
      this.#times.set(k, t);
    }
    return t;
  }

  #info(r: ScheduleRecord): ScheduleInfo {
    return scheduleInfoOf(r, this.#timesOf(r), this.#core.clock.now());
  }

  async #read(id: string): Promise<ScheduleRecord | null> {
    const key = scheduleKey(this.#core.queueName, id);
    const bytes = await this.#core.queue.kvGet(key);
    return bytes === null ? null : decodeScheduleRecord(bytes, key);
  }

  #locked<T>(id: string, fn: (current: ScheduleRecord | null) => Promise<T>): Promise<T> {
    if (typeof id !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
      return Promise.reject(new ValidationError(`a schedule id is 1 to 64 characters of [A-Za-z0-9_-], got ${describeValue(id)}`));
    }
    return this.#lock.run(`${this.#core.queueName}/${id}`, async () => fn(await this.#read(id)));
  }

  #changed(): { promise: Promise<void>; dispose: () => void } {
    const q = this.#core.queue;
    let set = changes.get(q);
    if (set === undefined) {
      set = new Set();
      changes.set(q, set);
    }
    const s = set;
    let fn!: () => void;
    const promise = new Promise<void>((resolve) => {
      fn = resolve;
    });
    s.add(fn);
    return { promise, dispose: () => s.delete(fn) };
  }

  #announce(): void {
    const set = changes.get(this.#core.queue);
    if (set === undefined) return;
    for (const fn of [...set]) fn();
  }
}

/** A schedule's record as `list` reports it, at `nowMs`. */
export function scheduleInfoOf(r: ScheduleRecord, times: CronTimes, nowMs: number): ScheduleInfo {
  return {
    id: r.id,
    cron: r.cron,
    timezone: r.timezone,
    overlap: r.overlap,
    catchUp: r.catchUp,
    jitterMs: r.jitterMs,
    paused: r.paused,
    nextTickMs: r.paused ? null : times.next(Math.max(r.lastTickMs, nowMs - 1)),
    lastTickMs: r.ticked ? r.lastTickMs : null,
    lastRunId: r.lastRunId,
    bufferedTickMs: r.bufferedTickMs,
    computedInput: r.computed === true,
    lastFailure: r.lastFailure ?? null,
  };
}

type KvScanner = { kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage> };

/** The stored entry of every schedule of step queue `q`, by id, a page at a time. */
async function* scheduleEntries(kv: KvScanner, q: string): AsyncIterable<{ readonly id: string; readonly key: string; readonly value: Uint8Array }> {
  const prefix = schedulesPrefix(q);
  let after: string | undefined;
  for (;;) {
    const page = await kv.kvScan(prefix, { limit: 256, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) yield { id: e.key.slice(prefix.length), key: e.key, value: e.value };
    if (page.nextCursor === undefined) return;
    after = page.nextCursor;
  }
}

/** The id of every schedule of step queue `q`, without decoding its record. */
async function* scheduleIds(kv: KvScanner, q: string): AsyncIterable<string> {
  for await (const e of scheduleEntries(kv, q)) yield e.id;
}

/** Every schedule record of step queue `q`, by id, a page at a time. */
export async function* scheduleRecords(kv: KvScanner, q: string): AsyncIterable<ScheduleRecord> {
  for await (const e of scheduleEntries(kv, q)) yield decodeScheduleRecord(e.value, e.key);
}

/** A schedule whose stored record could not be read, and why (a `StoreCorruptedError` naming it and the way out). */
export interface UnreadableSchedule {
  readonly id: string;
  readonly error: StoreCorruptedError;
}

/**
 * What `runtime.schedules.list` returns: the readable schedules, by id, as
 * an array, and beside them (a property no array method or JSON text sees)
 * each schedule whose record is damaged.
 */
export interface ScheduleList extends Array<ScheduleInfo> {
  readonly unreadable: readonly UnreadableSchedule[];
}

function scheduleList(schedules: ScheduleInfo[], unreadable: UnreadableSchedule[]): ScheduleList {
  Object.defineProperty(schedules, "unreadable", { value: Object.freeze(unreadable), enumerable: false });
  return schedules as ScheduleList;
}

/**
 * The schedules of step queue `q` as `list` reports them, from any KV
 * reader (a `QueueReader` in another process too), and apart from them
 * each schedule whose record is damaged: one such record does not hide
 * the others (an operator's listing shows them beside it).
 */
export async function readSchedules(
  kv: KvScanner,
  q: string,
  nowMs: number,
  listed: (id: string) => boolean = () => true,
): Promise<{ schedules: ScheduleInfo[]; unreadable: UnreadableSchedule[] }> {
  const schedules: ScheduleInfo[] = [];
  const unreadable: UnreadableSchedule[] = [];
  for await (const e of scheduleEntries(kv, q)) {
    if (!listed(e.id)) continue;
    try {
      const r = decodeScheduleRecord(e.value, e.key);
      schedules.push(scheduleInfoOf(r, cronTimes(`schedule "${r.id}"`, r.cron, r.timezone), nowMs));
    } catch (err) {
      if (err instanceof StoreCorruptedError) unreadable.push({ id: e.id, error: err });
      // A cron or time zone no definition check lets through (a record written by hand, or damaged in its text).
      else if (err instanceof ValidationError)
        unreadable.push({
          id: e.id,
          error: new StoreCorruptedError(e.key, `the record of schedule ${JSON.stringify(e.id)} holds ${err.message}`, DAMAGED_SCHEDULE_ADVICE(e.id)),
        });
      else throw err;
    }
  }
  return { schedules, unreadable };
}

/** Runs `fn` against another shard; its failure says the run's shard did not answer. */
async function reach<T>(runId: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    // A refusal of the submission itself (another input under the tick's id, bad options) is the caller's to handle.
    if (e instanceof InputMismatchError || e instanceof ValidationError) throw e;
    throw new RemoteRunsUnavailable(runId, e);
  }
}

/** An API call (trigger, backfill) reports the shard's own error, not the scheduler's wrapper. */
async function unreached<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw e instanceof RemoteRunsUnavailable ? e.cause : e;
  }
}

function requireRecord(id: string, r: ScheduleRecord | null): ScheduleRecord {
  if (r === null) throw new ScheduleNotFoundError(id);
  return r;
}

function abortOf(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

const COMPUTED_RUN_FIELDS = optionFields<ComputedTickRun>({ input: true, flow: true, debounce: true });

/**
 * A handler's answer as a tick's run; undefined when it is neither bytes
 * nor `{ input: bytes, flow?, debounce? }` with a flow rule. Its fields are
 * read once; one that is none of them is refused (`ValidationError`): a
 * misspelt `flow` would leave the schedule's own in force.
 */
function computedRunOf(answer: unknown): ComputedTickRun | undefined {
  if (isOptionBytes(answer)) return { input: answer };
  if (!isOptionObject(answer)) return undefined;
  const { input, ...options } = readExactOptions(answer, COMPUTED_RUN_FIELDS, "answer", "its input handler's answer");
  if (!isOptionBytes(input)) return undefined;
  // Their fields read once as well: the flow and debounce checked are those the tick's run carries.
  const { flow, debounce } = readRunOptions(options, "answer") as RunOptions;
  if (flow !== undefined && (!isOptionObject(flow) || typeof flow.rule !== "string")) return undefined;
  if (debounce !== undefined && !isOptionObject(debounce)) return undefined;
  return {
    input,
    ...(flow === undefined ? {} : { flow: flow as RunFlow }),
    ...(debounce === undefined ? {} : { debounce: debounce as RunDebounce }),
  };
}
