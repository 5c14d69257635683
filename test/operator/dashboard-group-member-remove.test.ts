/**
 * @module The run groups page's removal beside a damaged member, in the
 * headless browser over a directory store beside a running owner: a group
 * whose member record is damaged is named with both a repair and a removal
 * button for that member's run; the removal asks first with what its dry
 * run would take (the damage worded by the server), carries that plan's
 * token, and removes the run, its member record kept saying how it ended;
 * the group's other member runs on.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, type ObjectStore } from "../../runtime/index.js";
import { openServedOwner, waitingSteps } from "./fixtures/signal-owner.js";
import { groupMemberKey } from "../../runtime/workflow/records/kv-keys.js";
import { groupTag } from "../../runtime/workflow/groups/group-keys.js";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dashboardOver } from "./fixtures/store-dashboard.js";
import { until } from "../support/until.js";
import { waitText, waitUntil } from "./dashboard-page.js";

const tempDir = useTempDirs("taquba-dashboard-group-member-remove-");
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

describe("the run groups page's removal of a damaged member", () => {
  it.skipIf("missing" in browserFound)(
    "offers the removal beside the repair, asks with the removal's dry run, and removes the member's run",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { queue, runtime } = await openOwner(store);
      await runtime.group("live").submit([
        { key: "a", input: enc.encode("wait:ga") },
        { key: "b", input: enc.encode("wait:gb") },
      ]);
      const members = async () => (await runtime.listRuns({ limit: 100 })).runs.filter((r) => r.group !== undefined);
      await until(
        "the members wait",
        async () => {
          const ids = (await members()).map((r) => r.runId);
          return ids.length === 2 && (await Promise.all(ids.map(async (id) => (await runtime.status(id))?.step))).every((s) => s === 1);
        },
        SCENARIO_MS / 3,
      );
      const memberA = (await members()).find((r) => r.group?.key === "a")!.runId;
      const memberB = (await members()).find((r) => r.group?.key === "b")!.runId;
      const key = groupMemberKey(Q, groupTag("live"), "a");
      const bytes = await queue.kvGet(key);
      expect(bytes).not.toBeNull();
      await queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), state: "lost" })));

      const { dashboard } = await dashboardOver(dir, store, Q, stops);
      const browser = await launchBrowser((browserFound as { path: string }).path);
      try {
        const page = await browser.browser.newPage();
        const dialogs: string[] = [];
        page.on("dialog", (d) => {
          dialogs.push(d.message());
          void d.accept();
        });
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
