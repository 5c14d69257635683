/**
 * @module Cron expressions as tick times: parsing, validation and the next
 * or latest tick around an instant, in a timezone. croner does the calendar
 * work (fields, ranges, names, DST); this module only fixes the dialect
 * (5 fields, or 6 with seconds first) and turns its dates into epoch ms.
 *
 * The next tick is found in a fixed UTC offset whenever the zone keeps one
 * offset from a while before the instant to a while after the tick: croner
 * in a timezone converts every date it looks at with `Intl` (about a third
 * of a millisecond a tick), in a fixed offset it does not (about a tenth of
 * that), and while the offset holds both give the same ticks. Near an
 * offset change croner in the zone decides. The offset is read every twelve
 * hours of the way (no zone changes it and back within twelve hours).
 */
import { Cron } from "croner";
import { ValidationError } from "../../errors.js";
import { MAX_INSTANT_MS } from "../../time-bounds.js";

/**
 * The Gregorian calendar repeats every 400 years to the weekday (146,097
 * days, a whole number of weeks), and so do a zone's offsets once its last
 * rule holds. croner looks no further ahead than the year 3000 (and its
 * zone conversions throw near the end of what a `Date` holds), so ticks
 * from {@link SHIFT_FROM_MS} on are looked for whole cycles earlier and
 * moved back: every view of a schedule (its worker, `get`, `list`,
 * `backfill`) then sees the same ticks up to the last instant a `Date`
 * holds.
 */
const CYCLE_MS = 146_097 * 86_400_000;
/** Instants from here on are looked for whole cycles earlier, in [2400, 2800), where croner looks ahead far enough. */
const SHIFT_FROM_MS = Date.UTC(2800, 0, 1);

/** The whole cycles an instant is looked for earlier by. */
function cyclesBack(ms: number): number {
  return ms < SHIFT_FROM_MS ? 0 : Math.floor((ms - SHIFT_FROM_MS) / CYCLE_MS) + 1;
}

/** The tick times of one cron expression in one timezone. */
export interface CronTimes {
  /** The first tick strictly after `afterMs`, or null when there is none. */
  next(afterMs: number): number | null;
  /** The latest tick at or before `atMs`, or null when there is none. */
  latestAtOrBefore(atMs: number): number | null;
}

/** Why `cron` in `timezone` cannot schedule anything, or undefined when it can. */
export function cronProblem(cron: unknown, timezone: unknown): string | undefined {
  if (typeof cron !== "string" || cron.trim().length === 0) return "the cron expression must be a non-empty string";
  if (cron.length > 256) return "the cron expression is longer than 256 characters";
  if (typeof timezone !== "string" || timezone.length === 0) return 'the timezone must be a non-empty IANA name such as "UTC" or "Europe/Berlin"';
  if (!validTimezone(timezone)) return `"${timezone}" is not an IANA timezone this Node.js knows (such as "UTC" or "Europe/Berlin")`;
  let c: Cron;
  try {
    c = build(cron, timezone);
  } catch (e) {
    return `"${cron}" is not a cron expression of 5 fields (minute hour day month weekday), or 6 with seconds first: ${messageOf(e)}`;
  }
  if (c.nextRun(new Date(0)) === null) return `"${cron}" never matches a date`;
  return undefined;
}

/** The tick times of `cron` in `timezone`; throws `ValidationError` naming `what` when either is bad. */
export function cronTimes(what: string, cron: string, timezone: string): CronTimes {
  const problem = cronProblem(cron, timezone);
  if (problem !== undefined) throw new ValidationError(`${what}: ${problem}`);
  const c = build(cron, timezone);
  const zoned = zonedNext(cron, timezone, c);
  return {
    next(afterMs) {
      if (!(afterMs < MAX_INSTANT_MS)) return null;
      const shift = cyclesBack(afterMs) * CYCLE_MS;
      const t = zoned(afterMs - shift);
      return t === null || t + shift > MAX_INSTANT_MS ? null : t + shift;
    },
    latestAtOrBefore(atMs) {
      const at = Math.min(atMs, MAX_INSTANT_MS);
      const shift = cyclesBack(at) * CYCLE_MS;
      // previousRuns counts a tick earlier within the reference's second, so step 1 ms past `at`.
      const [d] = c.previousRuns(1, new Date(at - shift + 1));
      return d === undefined ? null : d.getTime() + shift;
    },
  };
}

/** Offset readings are at most this far apart: no zone changes its offset and back within it. */
const READ_EVERY_MS = 12 * 3_600_000;
/** The offset must hold this long before the instant and after the tick (a local time is ambiguous or skipped at most two hours from a change). */
const MARGIN_MS = 3 * 3_600_000;
/** A tick further than this past the last reading is asked of croner in the zone (reading every twelve hours would cost more). */
const MAX_AHEAD_MS = 4 * 86_400_000;

/** `next` of `zoned` (croner in `timezone`), in a fixed offset while the zone keeps one (see the module documentation). */
function zonedNext(cron: string, timezone: string, zoned: Cron): (afterMs: number) => number | null {
  const offsetAt = zoneOffset(timezone);
  const fixed = new Map<number, Cron>();
  // The offset was read as `held` at points at most READ_EVERY_MS apart from `heldFrom` through `heldTo`.
  let held: number | undefined;
  let heldFrom = 0;
  let heldTo = Number.NEGATIVE_INFINITY;
  /** Extends the readings through `to` (a step ahead of it when the offset holds that long); false when the offset differs before it. */
  const holdsThrough = (to: number): boolean => {
    while (heldTo < to) {
      const ahead = heldTo + READ_EVERY_MS;
      if (offsetAt(ahead) === held) {
        heldTo = ahead;
        continue;
      }
      // It changes within the step: what holds through `to` is all that is known.
      if (to >= ahead || offsetAt(to) !== held) return false;
      heldTo = to;
    }
    return true;
  };
  return (afterMs) => {
    if (!(afterMs - MARGIN_MS >= heldFrom && afterMs <= heldTo)) {
      heldFrom = afterMs - MARGIN_MS;
      heldTo = heldFrom;
      held = offsetAt(heldFrom);
      if (held !== undefined && !holdsThrough(afterMs)) held = undefined;
    }
    if (held !== undefined) {
      let c = fixed.get(held);
      if (c === undefined) {
        c = new Cron(cron, { utcOffset: held, paused: true, mode: "5-or-6-parts" });
        fixed.set(held, c);
      }
      const t = c.nextRun(new Date(afterMs))?.getTime();
      if (t !== undefined && t + MARGIN_MS - heldTo <= MAX_AHEAD_MS && holdsThrough(t + MARGIN_MS)) return t;
    }
    // Near an offset change, or a tick far ahead: croner in the zone decides, and the readings start again at the next call.
    heldTo = Number.NEGATIVE_INFINITY;
    const d = zoned.nextRun(new Date(afterMs));
    return d === null ? null : d.getTime();
  };
}

/** The UTC offset of `timezone` at an instant, in whole minutes (undefined when not whole minutes, or out of croner's fixed-offset range). */
function zoneOffset(timezone: string): (ms: number) => number | undefined {
  const format = new Intl.DateTimeFormat("en-US", { timeZone: timezone, timeZoneName: "longOffset" });
  return (ms) => {
    if (!Number.isFinite(ms)) return undefined;
    let name: string | undefined;
    try {
      name = format.formatToParts(ms).find((p) => p.type === "timeZoneName")?.value;
    } catch {
      return undefined;
    }
    if (name === "GMT") return 0;
    const m = name === undefined ? null : /^GMT([+-])(\d\d):(\d\d)$/.exec(name);
    if (m === null) return undefined;
    const minutes = (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
    return Math.abs(minutes) <= 870 ? minutes : undefined;
  };
}

function build(cron: string, timezone: string): Cron {
  return new Cron(cron, { timezone, paused: true, mode: "5-or-6-parts" });
}

function validTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function messageOf(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.replace(/^CronPattern: /, "");
}
