/**
 * @module Benchmark: what one load of the dashboard's run page reads for a
 * parent of thousands of running children.
 *
 * An owner on a directory store runs a parent whose first step starts
 * `--children` children (each waits for a signal, so its entry under the
 * parent stays), 100 a step, then waits. The dashboard (its HTTP API, as the page
 * calls it) reads the parent's page `--loads` times; the reader's KV
 * scans are counted: calls, entries returned, and those under the
 * parent's child entries, per load. Also the wall time per load (a
 * figure the machine's load moves; the counts it does not).
 *
 * Run: npx tsx bench/run-page-children.ts [--children 3000] [--loads 20]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "../runtime/index.js";
import { OperatorSession } from "../operator/cli/session.js";
import { Operations } from "../operator/inspect/operations.js";
import { startDashboard } from "../operator/dashboard/server.js";
import { childrenPrefix } from "../runtime/workflow/records/kv-keys.js";

const { values } = parseArgs({ options: { children: { type: "string", default: "3000" }, loads: { type: "string", default: "20" } } });
const CHILDREN = Number(values.children);
const LOADS = Number(values.loads);
const NAME = "bench";
const BATCH = 100;
const STEPS = "bench-steps";
const enc = new TextEncoder();

const dir = await mkdtemp(join(tmpdir(), "taquba-run-page-children-"));
const store = new LocalStore(dir);
const queue = await Queue.open(store, NAME);
let started = 0;
const runtime = WorkflowRuntime.builder(
  queue,
  store,
  {
    runStep: async (s) => {
      const text = new TextDecoder().decode(s.payload);
      if (text === "child") return StepOutcome.continueOnSignal(s.payload, `never-${s.runId}`, 86_400_000);
      // A step starts a batch of children at once, well within its lease; the next step the next batch.
      const from = s.stepNumber * BATCH;
      if (from >= CHILDREN) return StepOutcome.continueOnSignal(s.payload, "parent-never", 86_400_000);
      const keys = Array.from({ length: Math.min(BATCH, CHILDREN - from) }, (_, i) => `c${from + i}`);
      await Promise.all(keys.map((key) => s.children.start({ input: enc.encode("child"), key, parentClose: "abandon" })));
      started += keys.length;
      return StepOutcome.continueNow(s.payload);
    },
  },
  NoopTerminalHook,
)
  .queueName(STEPS)
  .build();
const worker = runtime.spawn();
const t0 = performance.now();
await runtime.submit({ runId: "parent", input: enc.encode("parent") });
const lastStep = Math.ceil(CHILDREN / BATCH);
while ((await runtime.status("parent"))?.step !== lastStep) await new Promise((r) => setTimeout(r, 200));
await queue.flush();
const setupS = (performance.now() - t0) / 1000;

const session = new OperatorSession({ storeUrl: `file://${dir}`, name: NAME, stepQueue: STEPS, store });
const reader = await session.reader();
const childPrefix = childrenPrefix(STEPS, "parent");
const count = { scans: 0, entries: 0, childScans: 0, childEntries: 0 };
const scan = reader.kvScan.bind(reader);
reader.kvScan = async (prefix, opts) => {
  const page = await scan(prefix, opts);
  count.scans++;
  count.entries += page.entries.length;
  if (prefix.startsWith(childPrefix)) {
    count.childScans++;
    count.childEntries += page.entries.length;
  }
  return page;
};
const dashboard = await startDashboard({
  ops: new Operations(session),
  refresh: async () => (await session.reader()).refresh(),
  info: { name: NAME, stepQueue: STEPS, store: "file://bench" },
  port: 0,
});
const PAGE = new URL("/api/runs/parent", dashboard.url);
// Loads until the reader sees the parent (the owner's writes reach it by its refresh), not counted.
for (let tries = 0; (await fetch(PAGE)).status !== 200; tries++) {
  if (tries > 300) throw new Error(`the reader never saw the parent: ${await (await fetch(PAGE)).text()}`);
  await reader.refresh();
  await new Promise((r) => setTimeout(r, 200));
}
for (const k of Object.keys(count) as (keyof typeof count)[]) count[k] = 0;
const t1 = performance.now();
let damaged = 0;
for (let i = 0; i < LOADS; i++) {
  const res = await fetch(PAGE);
  const body = (await res.json()) as { damage?: unknown[] };
  if (res.status !== 200) throw new Error(`run page answered ${res.status}`);
  damaged += body.damage?.length ?? 0;
}
const perLoadMs = (performance.now() - t1) / LOADS;
const per = (x: number) => (x / LOADS).toFixed(1);
console.log(
  `run page of a parent of ${started} running children (directory store), ${LOADS} loads; set-up ${setupS.toFixed(1)} s; load avg ${loadavg()[0]!.toFixed(1)}`,
);
console.log("| children | KV scans/load | entries read/load | child-entry scans/load | child entries read/load | ms/load | damage shown |");
console.log("|---|---|---|---|---|---|---|");
console.log(
  `| ${started} | ${per(count.scans)} | ${per(count.entries)} | ${per(count.childScans)} | ${per(count.childEntries)} | ${perLoadMs.toFixed(1)} | ${damaged} |`,
);

await dashboard.close();
await session.close();
await worker.shutdown();
await queue.close();
await rm(dir, { recursive: true, force: true });
