/**
 * Nightly report: a cron schedule from a spec, with catch-up after downtime.
 *
 * Shows: `schedules:` in `nightly-report/reports.taquba.yaml` (generated
 * into `nightly-report/generated`) declares a schedule that starts the
 * `sales.report` job at 02:30 Berlin time with a fixed input;
 * `upsertSchedules(runner, reports.schedules)` registers it, and the
 * runner's worker decides its ticks. A `MockClock` moves the nights along:
 * each tick starts one run whose id is the schedule and the tick time,
 * the night the clocks go forward runs at 03:00, and after three nights of
 * downtime the `catch_up: { all_within_ms }` policy runs every missed night
 * once the worker is back. Then `list`, `trigger` and `pause`.
 *
 * Run: npx tsx examples/nightly-report.ts
 */
import { JobRunner, MemoryStore, MockClock, Queue, upsertSchedules } from "taquba";
import { reports } from "./nightly-report/generated/index.js";

const HOUR = 3_600_000;
const berlin = (ms: number) => new Date(ms).toLocaleString("sv-SE", { timeZone: "Europe/Berlin" });

/** The job, typed by the generated interface; each call settles the promise `nextReport()` handed out. */
class SalesReport implements reports.SalesReportHandler {
  #waiting: Array<(runId: string) => void> = [];
  readonly built = new Set<string>();
  next(): Promise<string> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }
  async run(input: reports.SalesReportInput, ctx: reports.SalesReportContext): Promise<reports.SalesReportOutput> {
    const key = `reports/${input.region}/${ctx.jobId}.${input.format}`;
    this.built.add(ctx.jobId);
    this.#waiting.shift()?.(ctx.jobId);
    return { object_key: key };
  }
}

const store = new MemoryStore();
const clock = new MockClock(Date.parse("2026-03-27T12:00:00Z"));
const handler = new SalesReport();

async function start() {
  const queue = await Queue.open(store, "reports", { clock });
  const runner = reports.register(JobRunner.builder(queue, store), { salesReport: handler }).build();
  return { queue, runner, worker: runner.spawn() };
}

/** Moves the clock past the next tick and its jitter (at most a minute), and waits for that night's report. */
async function night(app: Awaited<ReturnType<typeof start>>): Promise<void> {
  const [info] = await app.runner.runtime.schedules.list();
  const built = handler.next();
  clock.set(info!.nextTickMs! + 60_000);
  const runId = await built;
  // The job ends before the clock moves on (a jump past its lease would hand it out again).
  await app.runner.runtime.wait(runId);
  console.log(`tick ${berlin(info!.nextTickMs!)} Berlin: report run ${runId}`);
}

let app = await start();
const [registered] = await upsertSchedules(app.runner, reports.schedules);
console.log(`schedule ${registered!.id}: "${registered!.cron}" in ${registered!.timezone}, next tick ${berlin(registered!.nextTickMs!)} Berlin`);
// Registering again at every start changes nothing: the schedule keeps its state.
await upsertSchedules(app.runner, reports.schedules);

await night(app); // 2026-03-28
await night(app); // 2026-03-29: 02:30 does not exist that night, the tick is at 03:00 CEST
await night(app); // 2026-03-30

// Downtime: the worker is stopped for three nights.
await app.worker.shutdown();
await app.queue.close();
clock.set(Date.parse("2026-04-02T10:00:00Z"));
console.log(`worker down until ${berlin(clock.now())} Berlin`);
const caughtUp = [handler.next(), handler.next(), handler.next()];
app = await start();
clock.advance(60_000); // past the jitter of the caught-up ticks
for (const runId of await Promise.all(caughtUp)) {
  await app.runner.runtime.wait(runId);
  console.log(`caught up: report run ${runId}`);
}

const [state] = await app.runner.runtime.schedules.list();
console.log(`last tick ${berlin(state!.lastTickMs!)} Berlin, next tick ${berlin(state!.nextTickMs!)} Berlin`);

const triggered = handler.next();
const fired = await app.runner.runtime.schedules.trigger("nightly-sales-eu");
await app.runner.runtime.wait(await triggered);
console.log(`triggered now: run ${fired.runId} built its report`);

const paused = await app.runner.runtime.schedules.pause("nightly-sales-eu");
clock.advance(24 * HOUR);
await new Promise((r) => setTimeout(r, 50));
console.log(`paused: ${paused.paused}, next tick ${paused.nextTickMs ?? "none while paused"}, a day later still ${handler.built.size} reports`);

await app.worker.shutdown();
await app.queue.close();
console.log(`nightly-report done: ${handler.built.size} reports built, one run per tick`);
