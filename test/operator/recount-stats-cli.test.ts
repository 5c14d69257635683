/**
 * @module `taquba queue recount` and the dashboard's "Recount stats" over a
 * directory beside a running owner, its stats record of queue "mail"
 * damaged: `queue stats` names the damaged queue and what to run beside
 * the others' counts; a move of the queue is refused naming the command;
 * the dry run prints what is wrong, what would be written and the plan;
 * a plan the queue no longer gives is refused (exit 4, HTTP 409), nothing
 * written; the confirmed plan writes the counts of the queue's jobs and
 * the queue moves again. In the headless browser, the queues page names
 * the damaged queue with a recount button that asks with the dry run's
 * counts first.
 */
import { pathToFileURL } from "node:url";
import { Packr } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, type Queue } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { statsKey } from "../../runtime/queue/keys.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { openServedOwner, waitingSteps } from "./fixtures/signal-owner.js";
import { dashboardOver } from "./fixtures/store-dashboard.js";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { scaledForLoad } from "../support/load.js";
import { until } from "../support/until.js";
import { acceptDialogs, waitText, waitUntil } from "./dashboard-page.js";

const tempDir = useTempDirs("taquba-recount-stats-cli-");
const browserFound = findBrowser();
const Q = "workflow-steps";
const packr = new Packr({ useRecords: false });
const enc = new TextEncoder();
const TIMEOUT_MS = scaledForLoad(120_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, TIMEOUT_MS);

/** An owner whose queue "mail" holds two pending jobs and one claimed, its stats record damaged; `damage` writes other bytes. */
async function damagedOwner() {
  const dir = await tempDir();
  const store = new LocalStore(dir);
  const owner = await openServedOwner(store, waitingSteps());
  stops.push(() => owner.stop());
  const queue: Queue = owner.queue;
  for (const p of ["a", "b", "c"]) await queue.enqueue("mail", enc.encode(p));
  const held = (await queue.claim("mail"))!;
  const core = ticketOf(held)!.owner as QueueCore;
  const damage = async (counts: unknown[]) => {
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack(counts)));
    await queue.flush();
  };
  await damage(["x2", 0, 1, 0, 0]);
  return { dir, store, queue, damage };
}

describe("taquba queue recount", () => {
  it(
    "names the damage in queue stats, refuses a changed plan, and writes the confirmed recount",
    async () => {
      const { dir, queue, damage } = await damagedOwner();
      const url = pathToFileURL(dir).href;
      const cli = async (...words: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main([...words.slice(0, 2), url, ...words.slice(2), "--name", "app", "--timeout", "60000"], {
          out: (t: string) => out.push(t),
          err: (t: string) => err.push(t),
          color: false,
        });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };
      await expect(queue.enqueue("mail", enc.encode("d"))).rejects.toThrow(/taquba queue recount mail/);

      const listed = await cli("queue", "stats");
      expect(listed.code, listed.err).toBe(EXIT.ok);
      expect(listed.err).toMatch(/queue mail: its stats record is damaged \(.*"x2".*\); .*taquba queue recount mail --dry-run/);

      const dry = await cli("queue", "recount", "mail", "--dry-run");
      expect(dry.code, dry.err).toBe(EXIT.ok);
      expect(dry.out).toMatch(/^queue mail: its stats record is damaged/);
      expect(dry.out).toContain("dry run, nothing written: the recount would write pending 2, scheduled 0, claimed 1, done 0, dead 0");
      const token = /\nplan ([0-9a-f]{64}): confirm this plan with taquba queue recount mail --plan \1/.exec(dry.out)?.[1];
      expect(token, dry.out).toBeDefined();

      // The record written again after the dry run: the old plan is refused, nothing written.
      await damage(["x9", 0, 1, 0, 0]);
      const refused = await cli("queue", "recount", "mail", "--plan", token!);
      expect(refused.code).toBe(EXIT.refused);
      expect(refused.err).toMatch(/were not recounted: .*taquba queue recount mail --dry-run/);
      await expect(queue.view().stats("mail")).rejects.toThrow(/"x9"/);

      // The dashboard's endpoint answers the same refusal with 409.
      const { dashboard } = await dashboardOver(dir, new LocalStore(dir), Q, stops);
      const post = async (body: unknown) => {
        const res = await fetch(new URL("/api/queues/mail/recount", dashboard.url), {
          method: "POST",
          headers: { "content-type": "application/json", origin: new URL(dashboard.url).origin },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as { plan?: string; error?: { message: string } } };
      };
      expect((await post({ plan: token })).status).toBe(409);
      expect((await post({ dryrun: true })).status).toBe(400);

      const again = await cli("queue", "recount", "mail", "--dry-run");
      const now = /\nplan ([0-9a-f]{64})/.exec(again.out)![1]!;
      expect(now).not.toBe(token);
      const done = await cli("queue", "recount", "mail", "--plan", now);
      expect(done.code, done.err).toBe(EXIT.ok);
      expect(done.out).toContain("recounted: the record now holds pending 2, scheduled 0, claimed 1, done 0, dead 0");
      expect(await queue.view().stats("mail")).toEqual({ pending: 2, scheduled: 0, claimed: 1, done: 0, dead: 0 });
      await queue.enqueue("mail", enc.encode("d"));
      expect(await queue.view().stats("mail")).toMatchObject({ pending: 3 });
      const after = await cli("queue", "recount", "mail", "--dry-run");
      expect(after.out).toContain("the record already holds what its jobs count: nothing to write");
    },
    TIMEOUT_MS,
  );

  it.skipIf("missing" in browserFound)(
    "the queues page names the damaged queue with a recount button, which asks with the dry run's counts and recounts",
    async () => {
      const { dir, store, queue } = await damagedOwner();
      const { dashboard } = await dashboardOver(dir, store, Q, stops);
      const browser = await launchBrowser((browserFound as { path: string }).path);
      try {
        const page = await browser.browser.newPage();
        const dialogs = acceptDialogs(page);
        await page.goto(`${dashboard.url}#/`);
        await waitText(page, "[data-damaged-queue=mail]", "not all whole numbers");
        await page.click('[data-damaged-queue=mail] button[data-action="recount"]');
        await until(
          "the stats recounted",
          async () =>
            (await queue
              .view()
              .stats("mail")
              .catch(() => null)) !== null,
          TIMEOUT_MS / 3,
        );
        expect(dialogs).toEqual([
          expect.stringMatching(
            /^Recount the stats of queue mail\? Its stats record is damaged \(.*\)\. The recount writes pending 2, scheduled 0, claimed 1, done 0, dead 0, counted from its jobs\.$/,
          ),
        ]);
        expect(await queue.view().stats("mail")).toEqual({ pending: 2, scheduled: 0, claimed: 1, done: 0, dead: 0 });
        await waitUntil(page, `document.querySelector("[data-queue=mail]") !== null && document.querySelector("[data-damaged-queue=mail]") === null`);
      } finally {
        await browser.close();
      }
    },
    TIMEOUT_MS,
  );
});
