/**
 * @module The dashboard of a sharded deployment in a real headless browser:
 * the `taquba dashboard` bin in its own process over a directory store split
 * into 3 shards, all owned by a worker of this process. The runs page
 * merges every shard and follows a run submitted later (live refresh over
 * all shards); a run's page and a group's page reach their shards; cancel
 * goes to the run's shard; queue health and dead letters are shown per
 * shard and a dead job is redriven on its shard; the owners page shows
 * each shard's owner.
 */
import { pathToFileURL } from "node:url";
import type { Browser } from "puppeteer-core";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { LocalStore, TaqubaClient, createShards, runShardWorkers, shardOfRun, type Queue, type ShardWorkers } from "../../runtime/index.js";
import { openOwner, STEP_QUEUE } from "../client/fixtures/app.js";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { click, type DashboardProcess, startDashboardProcess, stopProcess, waitText, waitUntil } from "./dashboard-page.js";

const tempDir = useTempDirs("taquba-dashboard-sharded-");
const SHARDS = 3;
const DEAD_SHARD = 1;
const MAIL = "mail";
const enc = new TextEncoder();
const json = (v: unknown): Uint8Array => enc.encode(JSON.stringify(v));
const browserFound = findBrowser();

describe("the dashboard of a sharded store in a headless browser", () => {
  let workers: ShardWorkers | undefined;
  let dashboard: DashboardProcess | undefined;
  let browser: { browser: Browser; close(): Promise<void> } | undefined;
  let client: TaqubaClient | undefined;
  const queues = new Map<number, Queue>();
  let url = "";
  const ids = Array.from({ length: 9 }, (_, i) => `run-${i}`);

  beforeAll(async () => {
    if ("missing" in browserFound) return;
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await createShards(store, "app", SHARDS);
    workers = await runShardWorkers(store, "app", {
      processId: "worker-1",
      logger: { error: () => undefined },
      start: async ({ shard, storeName, term }) => {
        const owner = await openOwner(term.guard(store), { name: storeName, listIntervalMs: 50 });
        queues.set(shard, owner.queue);
        if (shard === DEAD_SHARD) {
          // One dead letter of a plain queue, on one shard.
          await owner.queue.enqueue(MAIL, enc.encode("welcome"), { jobId: "bounce-mail", maxAttempts: 1 });
          const job = await owner.queue.claim(MAIL);
          if (job !== null) await owner.queue.nack(job, "550 mailbox unavailable");
        }
        return { stop: () => owner.stop() };
      },
    });
    await until("every shard owned", () => workers!.owned().length === SHARDS && queues.size === SHARDS, 30_000);
    client = await TaqubaClient.open(store, { name: "app", queueName: STEP_QUEUE, pollIntervalMs: 200 });
    expect(new Set(ids.map((id) => shardOfRun(id, SHARDS))).size).toBe(SHARDS);
    for (const id of ids) await client.submit({ runId: id, input: json(id === "run-4" ? { wait: `w:${id}` } : { id }) });
    for (const id of ids) if (id !== "run-4") await client.wait(id);
    const group = client.group("nightly");
    await group.submit(Array.from({ length: 6 }, (_, k) => ({ key: `k${k}`, input: json({ k }) })));
    await group.join();
    expect(new Set(Array.from({ length: 6 }, (_, k) => group.shardOf(`k${k}`))).size, "members on several shards").toBeGreaterThan(1);

    dashboard = await startDashboardProcess([pathToFileURL(dir).href, "--name", "app", "--step-queue", STEP_QUEUE, "--port", "0", "--poll", "300"]);
    url = dashboard.url;
    browser = await launchBrowser(browserFound.path);
  }, 300_000);

  // After the one test and before its directory is removed (an inner afterEach runs first): a
  // worker renewing a lease while the directory is removed fails the removal with ENOTEMPTY.
  afterEach(async () => {
    await browser?.close();
    await stopProcess(dashboard?.child);
    await client?.close();
    await workers?.stop();
    dashboard?.expectNoFailures();
  }, 60_000);

  it("merges runs of every shard, follows them live, opens runs and groups on their shards, and shows owners", async (ctx) => {
    if ("missing" in browserFound) return ctx.skip(`no browser: ${browserFound.missing}`);
    const page = await browser!.browser.newPage();
    page.on("dialog", (d) => void d.accept());
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));

    // Runs of every shard on one page; a run submitted now shows up without navigating.
    await page.goto(`${url}#/runs`);
    for (const id of ids) await page.waitForSelector(`tr[data-row="${id}"]`, { timeout: 60_000 });
    await waitText(page, "#store", "app (3 shards)");
    let late = "";
    for (let i = 0; !late; i++) if (shardOfRun(`late-${i}`, SHARDS) !== shardOfRun(ids[0]!, SHARDS)) late = `late-${i}`;
    await client!.submit({ runId: late, input: json({ late: true }) });
    await page.waitForSelector(`tr[data-row="${late}"]`, { timeout: 60_000 });

    // A run's page reads its shard; cancel reaches the run's shard.
    await click(page, 'a[data-run="run-7"]');
    await waitText(page, "#run-id", "run-7");
    await page.waitForSelector('h1 [data-state="succeeded"]', { timeout: 30_000 });
    await page.goto(`${url}#/run/run-4`);
    await click(page, 'button[data-action="cancel"]');
    expect((await client!.wait("run-4")).termination.status).toBe("cancelled");
    await page.waitForSelector('h1 [data-state="cancelled"]', { timeout: 60_000 });

    // A group with members on several shards: one row, every member counted.
    await page.goto(`${url}#/groups`);
    await waitUntil(page, `document.querySelector('tr[data-group="nightly"]')?.textContent.includes("6")`);
    await click(page, 'tr[data-group="nightly"] a');
    await waitUntil(
      page,
      `document.querySelector('[data-card="total"] .value')?.textContent === "6" && document.querySelector('[data-card="succeeded"] .value')?.textContent === "6"`,
    );

    // Queue health per shard.
    await page.goto(`${url}#/`);
    for (let s = 0; s < SHARDS; s++) await page.waitForSelector(`section[data-shard="${s}"] tr[data-queue="${STEP_QUEUE}"]`, { timeout: 30_000 });
    expect(await page.$eval(`section[data-shard="${DEAD_SHARD}"] [data-card="dead letters"] .value`, (e) => e.textContent)).toBe("1");

    // Dead letters with their shard; redrive requeues the job on its shard.
    await page.goto(`${url}#/dead`);
    await page.waitForSelector(`tr[data-job="bounce-mail"][data-shard="${DEAD_SHARD}"]`, { timeout: 30_000 });
    await click(page, 'tr[data-job="bounce-mail"] button[data-action="redrive"]');
    await until("the dead job requeued on its shard", async () => (await queues.get(DEAD_SHARD)!.view().stats(MAIL)).dead === 0, 30_000);
    expect((await queues.get(DEAD_SHARD)!.view().stats(MAIL)).pending).toBe(1);
    await waitUntil(page, `document.querySelector('tr[data-job="bounce-mail"]') === null`);

    // Owners: every shard, its owner and a lease that has not run out.
    await page.goto(`${url}#/owners`);
    for (let s = 0; s < SHARDS; s++) await waitText(page, `tr[data-owner-shard="${s}"]`, "worker-1");
    const leases = await page.$$eval("tr[data-owner-shard] td:nth-child(3)", (tds) => tds.map((t) => t.textContent ?? ""));
    expect(leases).toHaveLength(SHARDS);
    for (const l of leases) expect(l).toMatch(/^in \d+s$/);
    // A renewal touches no queue store; the page follows it all the same, without navigating.
    const expiry = () => page.$eval('tr[data-owner-shard="0"]', (tr) => Number(tr.getAttribute("data-lease-expires")));
    const first = await expiry();
    expect(first).toBeGreaterThan(0);
    await until("the owners page shows the renewed lease", async () => (await expiry()) > first, 60_000);
    expect(pageErrors).toEqual([]);
    await page.close();

    // A dead letter position belongs to one shard; a shard out of range is refused.
    const api = new URL(url).origin;
    expect((await fetch(`${api}/api/dead?after=x`)).status).toBe(400);
    expect((await fetch(`${api}/api/dead?shard=${SHARDS}`)).status).toBe(400);
    const one = (await (await fetch(`${api}/api/dead?shard=0`)).json()) as { shards: { shard: number }[] };
    expect(one.shards.map((s) => s.shard)).toEqual([0]);
    // Without a shard, a redrive looks for the job on every shard.
    const redrive = (body: unknown) =>
      fetch(`${api}/api/dead/no-such-job/redrive`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const missing = await redrive({});
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain("on any of the 3 shards");
    expect((await redrive({ shard: -1 })).status).toBe(400);
    expect((await redrive({ shard: SHARDS })).status).toBe(400);
  }, 300_000);
});
