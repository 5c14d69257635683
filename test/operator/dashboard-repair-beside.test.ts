/**
 * @module The dashboard's repair where a run's page still loads but a
 * record beside the run is damaged, in the headless browser over a
 * directory store beside a running owner: a run whose signal wait is
 * damaged shows the damage on its page with a repair button, which asks
 * first with what the dry run found (the damage worded by the server) and
 * then ends the run failed; the run groups page names a group whose member
 * record is damaged with a repair button for that member's run; a healthy
 * run's page offers none. Beside that repair the page offers the member's
 * removal, which asks with what its dry run would take (the damage worded
 * by the server), carries that plan's token and removes the run, its member
 * record kept saying how it ended; the group's other member runs on.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, type ObjectStore } from "../../runtime/index.js";
import { openServedOwner, waitingSteps } from "./fixtures/signal-owner.js";
import { groupMemberKey, signalWaitKey } from "../../runtime/workflow/records/kv-keys.js";
import { groupTag } from "../../runtime/workflow/groups/group-keys.js";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dashboardOver } from "./fixtures/store-dashboard.js";
import { until } from "../support/until.js";
import { acceptDialogs, waitText, waitUntil } from "./dashboard-page.js";

const tempDir = useTempDirs("taquba-dashboard-repair-beside-");
const browserFound = findBrowser();
const Q = "workflow-steps";
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(180_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

/** The owner: `wait:<key>` waits an hour for a signal on its key; anything else succeeds. */
async function openOwner(store: ObjectStore) {
  const owner = await openServedOwner(store, waitingSteps());
  stops.push(owner.stop);
  return owner;
}

type Owner = Awaited<ReturnType<typeof openOwner>>;

/** Writes `change` over the fields of the record at `key`, as a damaged store would hold it. */
async function damage(queue: Owner["queue"], key: string, change: Record<string, unknown>): Promise<void> {
  const bytes = await queue.kvGet(key);
  expect(bytes, key).not.toBeNull();
  await queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
}

/** Submits group "live" of members "a" and "b", each waiting for a signal, and waits until they and `alsoWaiting` wait at step 1; the members' run ids. */
async function liveGroupWaiting(runtime: Owner["runtime"], alsoWaiting: readonly string[] = []): Promise<{ memberA: string; memberB: string }> {
  await runtime.group("live").submit([
    { key: "a", input: enc.encode("wait:ga") },
    { key: "b", input: enc.encode("wait:gb") },
  ]);
  const members = async () => (await runtime.listRuns({ limit: 100 })).runs.filter((r) => r.group !== undefined);
  await until(
    "the runs wait",
    async () => {
      const ids = [...alsoWaiting, ...(await members()).map((r) => r.runId)];
      return ids.length === alsoWaiting.length + 2 && (await Promise.all(ids.map(async (id) => (await runtime.status(id))?.step))).every((s) => s === 1);
    },
    SCENARIO_MS / 3,
  );
  const listed = await members();
  return { memberA: listed.find((r) => r.group?.key === "a")!.runId, memberB: listed.find((r) => r.group?.key === "b")!.runId };
}

describe("the dashboard's repair and removal of damage beside a run whose page loads", () => {
  it.skipIf("missing" in browserFound)(
    "offers the repair on the run's page and beside the group listing's damaged member, asking with the dry run first",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { queue, runtime } = await openOwner(store);
      await runtime.submit({ runId: "waiter", input: enc.encode("wait:wk-bad") });
      await runtime.submit({ runId: "healthy", input: enc.encode("wait:wk-ok") });
      const { memberA } = await liveGroupWaiting(runtime, ["waiter", "healthy"]);
      await damage(queue, signalWaitKey(Q, "wk-bad"), { step: -1 });
      await damage(queue, groupMemberKey(Q, groupTag("live"), "a"), { state: "lost" });

      const { dashboard } = await dashboardOver(dir, store, Q, stops);
      // The JSON of the run's page carries the damage as fields, worded by the server.
      const detail = (await (await fetch(new URL("/api/runs/waiter", dashboard.url))).json()) as { damage?: { record: string; words: string }[] };
      expect(detail.damage).toMatchObject([{ record: "signal_wait", words: "signal wait" }]);
      expect(((await (await fetch(new URL("/api/runs/healthy", dashboard.url))).json()) as { damage?: unknown }).damage).toBeUndefined();

      const browser = await launchBrowser((browserFound as { path: string }).path);
      try {
        const page = await browser.browser.newPage();
        const dialogs = acceptDialogs(page);
        await page.goto(`${dashboard.url}#/run/healthy`);
        await waitText(page, "#run-id", "healthy");
        expect(await page.$('button[data-action="repair"]')).toBeNull();

        await page.goto(`${dashboard.url}#/run/waiter`);
        await waitText(page, "#run-damage", "its signal wait");
        expect(await runtime.status("waiter")).toMatchObject({ step: 1 });
        await page.click('#run-damage button[data-action="repair"]');
        await waitText(page, "main", "repaired by an operator: its signal wait was damaged");
        expect(dialogs).toEqual([
          expect.stringMatching(
            /^Repair run waiter\? its signal wait is damaged \(the wait for signal "wk-bad": .*\)\. It ends failed, saying it was repaired\.$/,
          ),
        ]);
        expect((await runtime.wait("waiter")).termination).toMatchObject({ status: "failed" });

        await page.goto(`${dashboard.url}#/groups`);
        await waitText(page, "[data-unreadable=live]", "mend it with taquba runs repair");
        await page.click(`[data-unreadable=live] button[data-run="${memberA}"]`);
        // The status reads the damaged record (and throws) until the repair rewrote it.
        await until(
          "the member repaired",
          async () =>
            (
              await runtime
                .group("live")
                .status()
                .catch(() => null)
            )?.failed === 1,
          SCENARIO_MS / 3,
        );
        expect(dialogs[1]).toMatch(
          new RegExp(`^Repair run ${memberA}\\? its group member record is damaged \\(member "a": .*\\)\\. It ends failed, saying it was repaired\\.$`),
        );
        expect(await runtime.group("live").status()).toMatchObject({ failed: 1, pending: 1 });
        expect(await runtime.status("healthy")).toMatchObject({ state: "pending", step: 1 });
      } finally {
        await browser.close();
      }
    },
    SCENARIO_MS,
  );

  it.skipIf("missing" in browserFound)(
    "offers the removal beside the repair, asks with the removal's dry run, and removes the member's run",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { queue, runtime } = await openOwner(store);
      const { memberA, memberB } = await liveGroupWaiting(runtime);
      await damage(queue, groupMemberKey(Q, groupTag("live"), "a"), { state: "lost" });

      const { dashboard } = await dashboardOver(dir, store, Q, stops);
      const browser = await launchBrowser((browserFound as { path: string }).path);
      try {
        const page = await browser.browser.newPage();
        const dialogs = acceptDialogs(page);
        await page.goto(`${dashboard.url}#/groups`);
        await waitText(page, "[data-unreadable=live]", "mend it with taquba runs repair");
        // Both actions beside the member, each for that member's run.
        expect(await page.$(`[data-unreadable=live] button[data-action="repair"][data-run="${memberA}"]`)).not.toBeNull();
        await page.click(`[data-unreadable=live] button[data-action="remove"][data-run="${memberA}"]`);
        await until("the member removed", async () => (await runtime.status(memberA)) === null, SCENARIO_MS / 3);
        expect(dialogs).toEqual([
          expect.stringMatching(
            new RegExp(
              `^Remove run ${memberA}\\? its group member record is damaged \\(member "a": .*\\)\\. The removal takes its run record and step pointer .*\\.$`,
            ),
          ),
        ]);
        // The member record stays, saying how the run ended; the other member runs on.
        expect(await runtime.group("live").status()).toMatchObject({ failed: 1, pending: 1 });
        expect(await runtime.status(memberB)).toMatchObject({ state: "pending", step: 1 });
        // The page, drawn again, names the group no longer as unreadable.
        await waitUntil(page, `document.querySelector("[data-group=live]") !== null && document.querySelector("[data-unreadable=live]") === null`);
      } finally {
        await browser.close();
      }
    },
    SCENARIO_MS,
  );
});
