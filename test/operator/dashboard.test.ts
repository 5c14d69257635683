/**
 * @module The dashboard in a real headless browser (Debian's chromium
 * through puppeteer-core), served by the `taquba dashboard` bin in its own
 * process while the owner runs in another: the page lists runs, opens a
 * failed run's timeline, retries it after its cause is fixed, sends a
 * signal and cancels a run, each through the owner; user data (headers,
 * error text) is shown as text, never as markup. A screenshot of the run
 * page is written to .tmp/test-output/operator/. Also: the token a
 * non-loopback binding needs, and that every request must carry it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Browser } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore, TaqubaClient } from "taquba";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { startScript, type ChildScript } from "../support/child-script.js";
import { taquba } from "./cli-process.js";
import { acceptDialogs, click, type DashboardProcess, startDashboardProcess, stopProcess, waitText, waitUntil } from "./dashboard-page.js";
import { OPS_OWNER_FAILURES, STEP_QUEUE, STORE_NAME } from "./fixtures/ops-app.js";
import { expectNoUnexpectedFailures } from "../support/background-errors.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const OWNER = fileURLToPath(new URL("./fixtures/ops-owner.ts", import.meta.url));
const OUTPUT = join(ROOT, ".tmp", "test-output", "operator");
const enc = new TextEncoder();
const TOKEN = "s3cret-token-for-the-test-0123";

const browserFound = findBrowser();

describe("the dashboard in a headless browser", () => {
  let owner: ChildScript | undefined;
  let dashboard: DashboardProcess | undefined;
  let browser: { browser: Browser; close(): Promise<void> } | undefined;
  let client: TaqubaClient | undefined;
  let url = "";
  let work = "";

  beforeAll(async () => {
    if ("missing" in browserFound) return;
    // One store for the whole file (both tests use the owner): removed in afterAll.
    work = mkdtempSync(join(tmpdir(), "taquba-dashboard-"));
    const storeUrl = pathToFileURL(join(work, "store")).href;
    owner = startScript(OWNER, [storeUrl]);
    await owner.waitFor((l) => l.includes("ready"));
    client = await TaqubaClient.open(openStore(storeUrl), { name: STORE_NAME, queueName: STEP_QUEUE, pollIntervalMs: 200 });
    const hostile = '<img src=x onerror="window.__pwned=1">';
    await client.submit({ runId: "order-ok", input: enc.encode("{}"), options: { headers: { tenant: hostile } } });
    await client.submit({
      runId: "order-fail",
      input: enc.encode(JSON.stringify({ fail: "card declined by the issuer (code 51)", fixedBy: join(work, "fixed") })),
      options: { maxAttemptsPerStep: 2, headers: { tenant: "acme", order: "A-1042" } },
    });
    await client.submit({ runId: "order-evil", input: enc.encode(JSON.stringify({ fail: `declined ${hostile}` })), options: { maxAttemptsPerStep: 1 } });
    await client.submit({ runId: "order-wait", input: enc.encode(JSON.stringify({ wait: "approve-9" })) });
    await client.submit({ runId: "order-stuck", input: enc.encode(JSON.stringify({ wait: "never" })) });
    expect((await client.wait("order-fail")).termination.status).toBe("failed");
    expect((await client.wait("order-evil")).termination.status).toBe("failed");
    dashboard = await startDashboardProcess([storeUrl, "--name", STORE_NAME, "--step-queue", STEP_QUEUE, "--port", "0", "--poll", "300"]);
    url = dashboard.url;
    browser = await launchBrowser(browserFound.path);
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    await stopProcess(dashboard?.child);
    await client?.close();
    await owner?.kill();
    if (work !== "") rmSync(work, { recursive: true, force: true });
    if (owner !== undefined) expectNoUnexpectedFailures("the owner process", owner, OPS_OWNER_FAILURES);
    dashboard?.expectNoFailures();
  }, 60_000);

  it("lists runs, opens a failed run, retries it, signals and cancels through the owner", async (ctx) => {
    if ("missing" in browserFound) return ctx.skip(`no browser: ${browserFound.missing}`);
    const page = await browser!.browser.newPage();
    const dialogs = acceptDialogs(page);
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));

    await page.goto(`${url}#/runs`);
    for (const id of ["order-ok", "order-fail", "order-evil", "order-wait", "order-stuck"])
      await page.waitForSelector(`tr[data-row="${id}"]`, { timeout: 60_000 });
    expect(await page.$eval('tr[data-row="order-fail"] [data-state]', (e) => e.getAttribute("data-state"))).toBe("failed");
    mkdirSync(OUTPUT, { recursive: true });
    writeFileSync(join(OUTPUT, "dashboard-runs.png"), await page.screenshot({ fullPage: true }));

    // Filter by state.
    await page.goto(`${url}#/runs?state=failed`);
    await waitUntil(
      page,
      `[...document.querySelectorAll("tr[data-row] [data-state]")].every((e) => e.dataset.state === "failed") && document.querySelector('tr[data-row="order-fail"]') !== null && document.querySelector('tr[data-row="order-evil"]') !== null && document.querySelector('tr[data-row="order-ok"]') === null`,
      30_000,
    );

    // The failed run: its error as text, each attempt with its stack.
    await click(page, 'a[data-run="order-fail"]');
    await waitText(page, "#run-id", "order-fail");
    await waitText(page, "main", "card declined by the issuer (code 51)");
    expect(await page.$$eval('tr[data-kind="attempt"]', (rows) => rows.length)).toBe(2);
    expect(await page.$eval("main", (m) => m.textContent)).toContain("PaymentDeclinedError");
    writeFileSync(join(OUTPUT, "dashboard-run-failed.png"), await page.screenshot({ fullPage: true }));

    // Fix the cause, retry from the page: the run succeeds and the page follows live.
    writeFileSync(join(work, "fixed"), "");
    await click(page, 'button[data-action="retry"]');
    await page.waitForSelector('h1 [data-state="succeeded"]', { timeout: 60_000 });
    expect(dialogs.at(-1)).toBe("Retry run order-fail from step 0?");
    expect((await client!.status("order-fail"))?.state).toBe("terminated");
    writeFileSync(join(OUTPUT, "dashboard-run.png"), await page.screenshot({ fullPage: true }));

    // Waiting signals: send one from the page.
    await page.goto(`${url}#/waiting`);
    await page.waitForSelector('tr[data-row="order-wait"] textarea', { timeout: 30_000 });
    await page.$eval('tr[data-row="order-wait"] textarea', (t) => {
      (t as unknown as { value: string }).value = '{"approved": true}';
    });
    await click(page, 'tr[data-row="order-wait"] button[type="submit"]');
    const end = await client!.wait("order-wait");
    expect(end.termination.status).toBe("succeeded");
    expect(new TextDecoder().decode((await client!.outcome("order-wait"))?.result)).toBe('{"approved":true}');
    expect(dialogs.at(-1)).toContain('Send signal "approve-9"');

    // Cancel from the run page.
    await page.goto(`${url}#/run/order-stuck`);
    await page.waitForSelector('button[data-action="cancel"]', { timeout: 30_000 });
    await click(page, 'button[data-action="cancel"]');
    expect((await client!.wait("order-stuck")).termination.status).toBe("cancelled");
    await page.waitForSelector('h1 [data-state="cancelled"]', { timeout: 60_000 });

    // Queues, dead letters and groups pages render; user data never became markup.
    await page.goto(`${url}#/dead`);
    await waitText(page, "main", "550 mailbox <b>unavailable</b>");
    await page.goto(`${url}#/groups`);
    await waitUntil(page, `document.querySelector('tr[data-group="nightly-batch"]')?.textContent.includes("3")`);
    await click(page, 'tr[data-group="nightly-batch"] a');
    await waitUntil(
      page,
      `document.querySelector('[data-card="failed"] .value')?.textContent === "1" && document.querySelector('[data-card="succeeded"] .value')?.textContent === "2"`,
    );
    await waitText(page, "main", "row 7 is malformed");
    await page.goto(`${url}#/`);
    await page.waitForSelector(`tr[data-queue="${STEP_QUEUE}"]`, { timeout: 30_000 });
    await page.goto(`${url}#/run/order-ok`);
    await waitText(page, "main", 'tenant=<img src=x onerror="window.__pwned=1">');
    expect(await page.evaluate("typeof window.__pwned")).toBe("undefined");
    await page.goto(`${url}#/run/order-evil`);
    await waitText(page, "main", 'declined <img src=x onerror="window.__pwned=1">');
    expect(await page.evaluate("typeof window.__pwned")).toBe("undefined");
    expect(await page.$$eval("main img, main b, main script", (els) => els.length)).toBe(0);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 300_000);

  it("needs a token off loopback, and then on every request", async (ctx) => {
    if ("missing" in browserFound) return ctx.skip(`no browser: ${browserFound.missing}`);
    const storeUrl = pathToFileURL(join(work, "store")).href;
    const refused = await taquba(["dashboard", storeUrl, "--name", STORE_NAME, "--host", "0.0.0.0", "--port", "0"]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain("give --token");

    const guarded = await startDashboardProcess([storeUrl, "--name", STORE_NAME, "--step-queue", STEP_QUEUE, "--port", "0", "--token", TOKEN]);
    try {
      expect(guarded.url).toContain(`?token=${TOKEN}`);
      const base = new URL(guarded.url);
      const plain = `${base.origin}/`;
      expect((await fetch(plain)).status).toBe(401);
      expect((await fetch(`${base.origin}/api/runs`)).status).toBe(401);
      expect((await fetch(`${base.origin}/api/runs`, { headers: { authorization: "Bearer wrong-token-of-the-same-len" } })).status).toBe(401);
      expect((await fetch(`${base.origin}/api/events`)).status).toBe(401);
      expect(
        (await fetch(`${base.origin}/api/runs/order-ok/cancel`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status,
      ).toBe(401);
      const ok = await fetch(`${base.origin}/api/runs`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).toBe(200);
      // Opening the page with the token hands it to the page's later requests in a same-site cookie.
      const opened = await fetch(guarded.url);
      expect(opened.status).toBe(200);
      const cookie = opened.headers.get("set-cookie") ?? "";
      expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
      const pair = cookie.split(";")[0]!;
      expect((await fetch(`${base.origin}/app.js`, { headers: { cookie: pair } })).status).toBe(200);
      expect((await fetch(`${base.origin}/app.js`, { headers: { cookie: pair.replace(/=.*/, "=not-the-token-at-all-0000") } })).status).toBe(401);
      // A form post from another site (no JSON content type) is refused even with the token.
      const form = await fetch(`${base.origin}/api/runs/order-ok/cancel?token=${TOKEN}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "a=1",
      });
      expect(form.status).toBe(403);
      // A rebound DNS name reaching the loopback server is refused.
      const rebound = await new Promise<number>((resolve, reject) => {
        import("node:http").then(({ request }) => {
          const r = request(
            { host: base.hostname, port: base.port, path: `/api/runs?token=${TOKEN}`, headers: { host: `evil.example:${base.port}` } },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          r.on("error", reject);
          r.end();
        }, reject);
      });
      expect(rebound).toBe(421);

      // The page itself works with the address it printed.
      const page = await browser!.browser.newPage();
      await page.goto(`${guarded.url}#/runs`);
      await page.waitForSelector('tr[data-row="order-ok"]', { timeout: 60_000 });
      await page.close();
    } finally {
      await stopProcess(guarded.child);
    }
    guarded.expectNoFailures();
  }, 300_000);
});
