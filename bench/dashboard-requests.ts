/**
 * @module Benchmark: what an open dashboard costs in S3 requests.
 *
 * An owner (queue, runtime, client inbox) and the dashboard run over the
 * S3 protocol server on loopback; a headless chromium keeps one dashboard
 * page open for `--seconds` per scenario. The dashboard's store is wrapped
 * in `withCounting`, so only its own requests are counted (listings are
 * counted once each: every listing here fits in one page, one request).
 * Scenarios: no page open; the runs page while the owner is idle; the runs
 * page and the queues page while a run is submitted every second.
 *
 * Run: npx tsx bench/dashboard-requests.ts [--seconds 60] [--poll 2000]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { NoopTerminalHook, Queue, S3Store, serveClients, StepOutcome, WorkflowRuntime, withCounting } from "../runtime/index.js";
import { OperatorSession } from "../operator/cli/session.js";
import { Operations } from "../operator/inspect/operations.js";
import { startDashboard } from "../operator/dashboard/server.js";
import { findBrowser, launchBrowser } from "../test/support/browser.js";
import { startS3Server } from "../test/support/s3-server.js";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "60" }, poll: { type: "string", default: "2000" } } });
const seconds = Number(values.seconds);
const pollIntervalMs = Number(values.poll);
const NAME = "bench";
const STEPS = "bench-steps";

const found = findBrowser();
if ("missing" in found) throw new Error(found.missing);
const s3 = await startS3Server();
const ownerStore = new S3Store({ bucket: s3.bucket, prefix: "dash", clientConfig: s3.clientConfig });
const queue = await Queue.open(ownerStore, NAME);
const runtime = WorkflowRuntime.builder(queue, ownerStore, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook)
  .queueName(STEPS)
  .build();
const worker = runtime.spawn();
const inbox = serveClients(queue, runtime, { store: ownerStore });
for (let i = 0; i < 20; i++) await runtime.submit({ runId: `seed-${i}`, input: new Uint8Array([i]) });

const counted = withCounting(new S3Store({ bucket: s3.bucket, prefix: "dash", clientConfig: s3.clientConfig }));
const session = new OperatorSession({ storeUrl: `s3://${s3.bucket}/dash`, name: NAME, stepQueue: STEPS, store: counted });
await session.reader();
const dashboard = await startDashboard({
  ops: new Operations(session),
  refresh: async () => (await session.reader()).refresh(),
  info: { name: NAME, stepQueue: STEPS, store: "s3://bench" },
  port: 0,
  pollIntervalMs,
});
const browser = await launchBrowser(found.path);

async function scenario(label: string, hash: string | undefined, busy: boolean): Promise<void> {
  const page = hash === undefined ? undefined : await browser.browser.newPage();
  if (page !== undefined) {
    await page.goto(`${dashboard.url}${hash}`);
    await page.waitForSelector("main table", { timeout: 60_000 });
  }
  counted.reset();
  let n = 0;
  const submitter = busy ? setInterval(() => void runtime.submit({ runId: `busy-${Date.now()}-${n++}`, input: new Uint8Array([1]) }), 1000) : undefined;
  await new Promise((r) => setTimeout(r, seconds * 1000));
  if (submitter !== undefined) clearInterval(submitter);
  const c = { ...counted.counts };
  const perMinute = (x: number) => ((x * 60) / seconds).toFixed(1);
  console.log(
    `| ${label} | ${perMinute(c.gets + c.lists + c.puts + c.deletes)} | ${perMinute(c.lists)} | ${perMinute(c.gets)} | ${c.puts + c.deletes} | ${loadavg()[0]!.toFixed(1)} |`,
  );
  await page?.close();
}

console.log(`dashboard over the S3 protocol server, poll ${pollIntervalMs} ms, ${seconds} s per scenario`);
console.log("| scenario | requests/min | LIST/min | GET/min | writes | load avg |");
console.log("|---|---|---|---|---|---|");
await scenario("no page open, owner idle", undefined, false);
await scenario("runs page open, owner idle", "#/runs", false);
await scenario("runs page open, a run submitted every second", "#/runs", true);
await scenario("queues page open, a run submitted every second", "#/", true);

await browser.close();
await dashboard.close();
await session.close();
await inbox.stop();
await worker.shutdown();
await queue.close();
await s3.stop();
