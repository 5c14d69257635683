/**
 * @module Benchmark: what one load of the dashboard's run page (and
 * `taquba runs show --json`, the same read) reads of a run of thousands of
 * steps' history.
 *
 * An owner on a directory store runs a run of `--steps` steps that go on
 * at once, then waits for a signal (the history keeps its last 500 steps'
 * entries). The dashboard's `/api/runs/<id>` (its HTTP API, as the page
 * calls it) is loaded `--loads` times; beside it, `--loads` reads of the
 * whole history (`WorkflowView.inspectRun`, what each load read before).
 * The reader's KV scans are counted: calls and entries returned, those
 * under the run's history entries apart, per load. Also the wall time per
 * load (a figure the machine's load moves; the counts it does not).
 *
 * Run: npx tsx bench/run-page-history.ts [--steps 3000] [--loads 20]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "../runtime/index.js";
import { OperatorSession } from "../operator/cli/session.js";
import { Operations } from "../operator/inspect/operations.js";
import { startDashboard } from "../operator/dashboard/server.js";
import { runHistoryPrefix } from "../runtime/workflow/runs/history-records.js";

const { values } = parseArgs({ options: { steps: { type: "string", default: "3000" }, loads: { type: "string", default: "20" } } });
const STEPS = Number(values.steps);
const LOADS = Number(values.loads);
const NAME = "bench";
const QUEUE = "bench-steps";
const enc = new TextEncoder();

const dir = await mkdtemp(join(tmpdir(), "taquba-run-page-history-"));
const store = new LocalStore(dir);
const queue = await Queue.open(store, NAME);
const runtime = WorkflowRuntime.builder(
  queue,
  store,
  { runStep: async (s) => (s.stepNumber < STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.continueOnSignal(s.payload, "never", 86_400_000)) },
  NoopTerminalHook,
)
  .queueName(QUEUE)
  .build();
const worker = runtime.spawn();
const t0 = performance.now();
await runtime.submit({ runId: "long", input: enc.encode("x") });
while ((await runtime.status("long"))?.step !== STEPS + 1) await new Promise((r) => setTimeout(r, 200));
await queue.flush();
const setupS = (performance.now() - t0) / 1000;

const session = new OperatorSession({ storeUrl: `file://${dir}`, name: NAME, stepQueue: QUEUE, store });
const reader = await session.reader();
const historyPrefix = runHistoryPrefix(QUEUE, "long");
const count = { scans: 0, entries: 0, historyScans: 0, historyEntries: 0 };
const scan = reader.kvScan.bind(reader);
reader.kvScan = async (prefix, opts) => {
  const page = await scan(prefix, opts);
  count.scans++;
  count.entries += page.entries.length;
  if (prefix.startsWith(historyPrefix)) {
    count.historyScans++;
    count.historyEntries += page.entries.length;
  }
  return page;
};
const dashboard = await startDashboard({
  ops: new Operations(session),
  refresh: async () => (await session.reader()).refresh(),
  info: { name: NAME, stepQueue: QUEUE, store: "file://bench" },
  port: 0,
});
const PAGE = new URL("/api/runs/long", dashboard.url);
// Loads until the reader sees the run at its last step (the owner's writes reach it by its refresh), not counted.
for (let tries = 0; ; tries++) {
  const res = await fetch(PAGE);
  if (res.status === 200 && ((await res.json()) as { step?: number }).step === STEPS + 1) break;
  if (tries > 300) throw new Error("the reader never saw the run at its last step");
  await reader.refresh();
  await new Promise((r) => setTimeout(r, 200));
}

const view = await session.view();
const rows: string[] = [];
const measure = async (what: string, load: () => Promise<number>) => {
  for (const k of Object.keys(count) as (keyof typeof count)[]) count[k] = 0;
  const t1 = performance.now();
  let timeline = 0;
  for (let i = 0; i < LOADS; i++) timeline += await load();
  const ms = (performance.now() - t1) / LOADS;
  const per = (x: number) => (x / LOADS).toFixed(1);
  rows.push(
    `| ${what} | ${per(count.scans)} | ${per(count.entries)} | ${per(count.historyScans)} | ${per(count.historyEntries)} | ${(timeline / LOADS).toFixed(0)} | ${ms.toFixed(1)} |`,
  );
};
await measure("run page load (`/api/runs/<id>`)", async () => {
  const res = await fetch(PAGE);
  if (res.status !== 200) throw new Error(`run page answered ${res.status}`);
  return ((await res.json()) as { timeline: unknown[] }).timeline.length;
});
await measure("whole history (`inspectRun`, the read each load made before)", async () => (await view.inspectRun("long"))!.steps.length);
console.log(`run page of a run of ${STEPS} steps (directory store), ${LOADS} loads each; set-up ${setupS.toFixed(1)} s; load avg ${loadavg()[0]!.toFixed(1)}`);
console.log("| read | KV scans/load | entries read/load | history scans/load | history entries read/load | timeline entries (or steps) | ms/load |");
console.log("|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);

await dashboard.close();
await session.close();
await worker.shutdown();
await queue.close();
await rm(dir, { recursive: true, force: true });
