/**
 * @module The next tick in a fixed offset while the zone keeps one gives
 * exactly croner's ticks in the zone: compared in every timezone Node
 * knows, around each offset change of a random year (DST both ways, half-
 * hour zones, standard offsets changed for good), for expressions whose
 * ticks fall on the changes, and far from any change.
 */
import { Cron } from "croner";
import { describe, expect, it } from "vitest";
import { cronTimes } from "../../runtime/workflow/schedules/cron-times.js";
import { testRandom } from "../support/seed.js";

const HOUR = 3_600_000;
const WEEK = 7 * 24 * HOUR;
const CRONS: [string, number][] = [
  // [expression, ticks compared]
  ["*/30 * * * *", 80],
  ["0 * * * *", 60],
  ["15 1-3 * * *", 40],
  ["30 2 * * *", 12],
  ["0 0,12 * * *", 12],
  ["0 9 * * 1-5", 12],
  ["*/20 * * * * *", 60],
  ["59 23 * * *", 6],
  ["0 0 * * 0", 4],
];

/** Offset changes of `zone` within `year`, to the hour (read with an offset formatter of its own). */
function changes(zone: string, year: number): number[] {
  const f = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "shortOffset" });
  const offset = (ms: number) => f.formatToParts(ms).find((p) => p.type === "timeZoneName")!.value;
  const out: number[] = [];
  const end = Date.UTC(year + 1, 0, 1);
  // A week at a time: no zone changes its offset and back within a week.
  for (let t = Date.UTC(year, 0, 1); t < end; t += WEEK) {
    if (offset(t) === offset(t + WEEK)) continue;
    let lo = t;
    let hi = t + WEEK;
    while (hi - lo > HOUR / 4) {
      const mid = lo + Math.floor((hi - lo) / 2);
      if (offset(mid) === offset(lo)) lo = mid;
      else hi = mid;
    }
    out.push(hi);
  }
  return out;
}

function ours(cron: string, zone: string, from: number, n: number): number[] {
  const times = cronTimes("test", cron, zone);
  const out: number[] = [];
  for (let t = times.next(from); t !== null && out.length < n; t = times.next(t)) out.push(t);
  return out;
}

function croners(cron: string, zone: string, from: number, n: number): number[] {
  const c = new Cron(cron, { timezone: zone, paused: true, mode: "5-or-6-parts" });
  const out: number[] = [];
  for (let d = c.nextRun(new Date(from)); d !== null && out.length < n; d = c.nextRun(d)) out.push(d.getTime());
  return out;
}

describe("cron ticks in a timezone", () => {
  it("are croner's own around every offset change of a random year, in every timezone", () => {
    const r = testRandom("cron ticks around offset changes");
    const year = 1995 + r.int(45);
    let compared = 0;
    for (const zone of Intl.supportedValuesOf("timeZone")) {
      for (const change of changes(zone, year)) {
        const [cron, n] = CRONS[r.int(CRONS.length)]!;
        // From up to a day and a half before the change, so the ticks cross it (a seconds expression starts just before it).
        const from = cron.split(" ").length === 6 ? change - r.int(20) * 1000 - 1000 : change - r.int(36 * HOUR) - 1;
        expect(ours(cron, zone, from, n), `${cron} in ${zone} from ${new Date(from).toISOString()} (year ${year})`).toEqual(croners(cron, zone, from, n));
        compared++;
      }
    }
    // Most zones with daylight saving change twice a year; the run must have met many changes.
    expect(compared).toBeGreaterThan(50);
  }, 120_000);

  it("are croner's own far from any change, for long runs, and after a jump back in time", () => {
    const r = testRandom("cron ticks far from changes");
    for (const zone of [
      "UTC",
      "Europe/Berlin",
      "America/New_York",
      "Australia/Lord_Howe",
      "Asia/Kolkata",
      "Asia/Kathmandu",
      "Pacific/Chatham",
      "America/St_Johns",
    ]) {
      const [cron] = CRONS[r.int(CRONS.length)]!;
      const from = Date.UTC(2000 + r.int(40), r.int(12), 1 + r.int(28)) + r.int(86_400_000);
      expect(ours(cron, zone, from, 400), `${cron} in ${zone}`).toEqual(croners(cron, zone, from, 400));
      // One `CronTimes` asked about an earlier instant after a later one (a schedule replanned).
      const times = cronTimes("test", cron, zone);
      times.next(from + 400 * HOUR);
      const c = new Cron(cron, { timezone: zone, paused: true, mode: "5-or-6-parts" });
      expect(times.next(from)).toBe(c.nextRun(new Date(from))!.getTime());
    }
  });
});
