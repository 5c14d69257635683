/**
 * @module The dashboard's removal carries the plan it asked the operator to
 * confirm, in the headless browser over a directory store beside a running
 * owner: a waiting run whose listing entry is damaged offers its removal
 * on its page, asking with what the removal's dry run would take; while
 * the question is open its signal wait is damaged too. The confirmed
 * removal is refused, the page says the run changed and to review the new
 * plan, and the run waits on untouched; the next click asks with the new
 * plan, which then removes the run.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore } from "../../runtime/index.js";
import { openServedOwner, waitingSteps } from "./fixtures/signal-owner.js";
import { signalWaitKey } from "../../runtime/workflow/records/kv-keys.js";
import { parseSuffix, runIndexPrefix } from "../../runtime/workflow/runs/run-index.js";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dashboardOver } from "./fixtures/store-dashboard.js";
import { until } from "../support/until.js";
import { waitText } from "./dashboard-page.js";

const tempDir = useTempDirs("taquba-dashboard-remove-plan-");
const browserFound = findBrowser();
const Q = "workflow-steps";
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(180_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

describe("the dashboard's removal of a run that changed while its question was open", () => {
  it.skipIf("missing" in browserFound)(
    "refuses the confirmed plan, says so, leaves the run as it is, and asks again with the new plan",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const owner = await openServedOwner(store, waitingSteps());
      stops.push(owner.stop);
      const { queue, runtime } = owner;
      await runtime.submit({ runId: "waiter", input: enc.encode("wait:wk") });
      await until("the run waits", async () => (await runtime.status("waiter"))?.step === 1, SCENARIO_MS / 3);
      const prefix = runIndexPrefix(Q);
      const indexKey = (await queue.kvScan(prefix, { limit: 10 })).entries.find((e) => parseSuffix(e.key.slice(prefix.length))?.runId === "waiter")!.key;
      await queue.kvPut(indexKey, new Uint8Array(pack({ headers: 7 })));

      const { dashboard } = await dashboardOver(dir, store, Q, stops);

      const browser = await launchBrowser((browserFound as { path: string }).path);
      try {
        const page = await browser.browser.newPage();
        const dialogs: string[] = [];
        page.on("dialog", (d) => {
          dialogs.push(d.message());
          void (async () => {
            // While the first question is open, the run's signal wait is damaged: the removal would now mend it first.
            if (dialogs.length === 1) {
              const key = signalWaitKey(Q, "wk");
              await queue.kvPut(key, new Uint8Array(pack({ ...(unpack((await queue.kvGet(key))!) as Record<string, unknown>), step: -1 })));
            }
            await d.accept();
          })();
        });
        await page.goto(`${dashboard.url}#/run/waiter`);
        await waitText(page, "main", "its listing entry is damaged");
        await page.click('button[data-action="remove"]');
        await waitText(page, "#toast", "the run changed since you looked");
        await waitText(page, "#toast", "review the new plan");
        expect(dialogs).toEqual([
          expect.stringMatching(/^Remove run waiter\? its listing entry is damaged .*The removal takes its run record and step pointer .*its listing entries/),
        ]);
        // Nothing was written: the run waits on, its entry still damaged.
        expect(await runtime.status("waiter")).toMatchObject({ state: "pending", step: 1 });
        expect(await queue.kvGet(indexKey)).toEqual(new Uint8Array(pack({ headers: 7 })));

        // Asked again, the question says the new plan, and confirmed, it is carried out.
        await page.goto(`${dashboard.url}#/run/waiter`);
        await waitText(page, "main", "its listing entry is damaged");
        await page.click('button[data-action="remove"]');
        await waitText(page, "#toast", "run waiter removed");
        expect(dialogs[1]).toMatch(/^Remove run waiter\? .*its signal wait is damaged .*The removal takes /);
        expect(await runtime.status("waiter")).toBeNull();
        expect(await queue.kvGet(indexKey)).toBeNull();
      } finally {
        await browser.close();
      }
    },
    SCENARIO_MS,
  );
});
