/**
 * @module Schedule backfill: what listing the ticks of a backfill costs, per
 * tick, by cron expression and timezone.
 *
 * A backfill lists every tick of its range before it starts any run (up to
 * 10,000 ticks, each found from the one before it with `CronTimes.next`),
 * so the owner spends TICKS times the per-tick cost in one call. For each
 * expression and timezone (UTC: no offset changes; the others change it
 * twice a year, Lord Howe by half an hour), times TICKS chained `next`
 * calls (median of ROUNDS, default 3; each round on a fresh `cronTimes`)
 * and, for comparison, croner's own `nextRun` from scratch with the
 * timezone (what each step cost before), on a shorter run of CRONER_TICKS.
 * Both must list the same ticks; the bench fails if they do not. Besides
 * the times (unreliable on a loaded machine) it counts the calls of
 * `Intl.DateTimeFormat#formatToParts` per tick (the timezone conversions
 * that dominate croner's cost in a timezone), which do not depend on load.
 */
import { loadavg } from "node:os";
import { Cron } from "croner";
import { cronTimes } from "../runtime/workflow/schedules/cron-times.js";

const TICKS = Number(process.env.TICKS ?? 10_000);
const CRONER_TICKS = Number(process.env.CRONER_TICKS ?? 2_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const FROM = Date.UTC(2025, 0, 1);
const CRONS = ["*/5 * * * *", "0 9 * * 1-5", "30 2 * * *"];
const ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"];

/** Calls of `formatToParts` so far (every timezone conversion, croner's and ours). */
let intlCalls = 0;
const formatToParts = Intl.DateTimeFormat.prototype.formatToParts;
Intl.DateTimeFormat.prototype.formatToParts = function (this: Intl.DateTimeFormat, date?: Date | number) {
  intlCalls++;
  return formatToParts.call(this, date);
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function listed(cron: string, zone: string, n: number): { ms: number; ticks: number[]; intl: number } {
  const times = cronTimes("bench", cron, zone);
  const ticks: number[] = [];
  const calls = intlCalls;
  const t0 = performance.now();
  for (let t = times.next(FROM - 1); t !== null && ticks.length < n; t = times.next(t)) ticks.push(t);
  return { ms: performance.now() - t0, ticks, intl: intlCalls - calls };
}

function croner(cron: string, zone: string, n: number): { ms: number; ticks: number[]; intl: number } {
  const c = new Cron(cron, { timezone: zone, paused: true, mode: "5-or-6-parts" });
  const ticks: number[] = [];
  const calls = intlCalls;
  const t0 = performance.now();
  for (let d = c.nextRun(new Date(FROM - 1)); d !== null && ticks.length < n; d = c.nextRun(d)) ticks.push(d.getTime());
  return { ms: performance.now() - t0, ticks, intl: intlCalls - calls };
}

function main(): void {
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
  console.log(`schedule backfill: TICKS=${TICKS}, CRONER_TICKS=${CRONER_TICKS}, ROUNDS=${ROUNDS}, from ${new Date(FROM).toISOString()}, load average ${load}`);
  console.log(
    "| cron | timezone | cronTimes.next: us per tick, Intl calls per tick | 10,000 ticks | croner nextRun in the zone: us per tick, Intl calls per tick |",
  );
  console.log("|---|---|---|---|---|");
  for (const cron of CRONS) {
    for (const zone of ZONES) {
      const ours: number[] = [];
      let ticks: number[] = [];
      let intl = 0;
      for (let r = 0; r < ROUNDS; r++) {
        const run = listed(cron, zone, TICKS);
        ours.push(run.ms);
        ticks = run.ticks;
        intl = run.intl;
      }
      const theirs = croner(cron, zone, Math.min(TICKS, CRONER_TICKS));
      const same = theirs.ticks.every((t, i) => t === ticks[i]);
      if (!same) throw new Error(`${cron} in ${zone}: cronTimes and croner list different ticks`);
      const perTick = (median(ours) * 1000) / ticks.length;
      console.log(
        `| \`${cron}\` | ${zone} | ${perTick.toFixed(1)}, ${(intl / ticks.length).toFixed(2)} | ${((perTick * 10_000) / 1e6).toFixed(2)} s | ${((theirs.ms * 1000) / theirs.ticks.length).toFixed(1)}, ${(theirs.intl / theirs.ticks.length).toFixed(2)} |`,
      );
    }
  }
}

main();
