/**
 * @module Cron expressions as tick times: parsing, validation and the next
 * or latest tick around an instant, in a timezone. croner does the calendar
 * work (fields, ranges, names, DST); this module only fixes the dialect
 * (5 fields, or 6 with seconds first) and turns its dates into epoch ms.
 */
import { Cron } from "croner";
import { ValidationError } from "../../errors.js";

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
  return {
    next(afterMs) {
      const d = c.nextRun(new Date(afterMs));
      return d === null ? null : d.getTime();
    },
    latestAtOrBefore(atMs) {
      // previousRuns counts a tick earlier within the reference's second, so step 1 ms past `atMs`.
      const [d] = c.previousRuns(1, new Date(atMs + 1));
      return d === undefined ? null : d.getTime();
    },
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
