/**
 * @module The dashboard's repair and removal carry the plan they asked the
 * operator to confirm, in the headless browser over a directory store
 * beside a running owner: a waiting run whose listing entry is damaged
 * offers its repair (the dry run: the entry is rewritten, the run is not
 * changed) and its removal on its page; while the question is open its
 * signal wait is damaged too, so the plan changes (the repair would now end
 * the run, the removal would mend the wait first). The confirmed action is
 * refused, the page says the run changed and to review the new plan, and
 * the run waits on untouched; the next click asks with the new plan, which
 * then is carried out.
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

const tempDir = useTempDirs("taquba-dashboard-confirmed-plan-");
const browserFound = findBrowser();
const Q = "workflow-steps";
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(180_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

/** What each action asks first and then, and what it leaves once carried out. */
interface PlanCase {
  action: "repair" | "remove";
  firstAsked: RegExp;
  secondAsked: RegExp;
  carriedOut: string;
  expectCarriedOut: (owner: Awaited<ReturnType<typeof openServedOwner>>, indexKey: string) => Promise<void>;
}

const CASES: PlanCase[] = [
  {
    action: "repair",
    firstAsked: /^Repair run waiter\? its listing entry is damaged .*Its listing entry is rewritten; the run is not changed\.$/,
    secondAsked: /^Repair run waiter\? .*its signal wait is damaged .*It ends failed, saying it was repaired\.$/,
    carriedOut: "repaired by an operator",
    expectCarriedOut: async ({ runtime }) => {
      expect((await runtime.wait("waiter")).termination).toMatchObject({ status: "failed" });
    },
  },
  {
    action: "remove",
    firstAsked: /^Remove run waiter\? its listing entry is damaged .*The removal takes its run record and step pointer .*its listing entries/,
    secondAsked: /^Remove run waiter\? .*its signal wait is damaged .*The removal takes /,
    carriedOut: "run waiter removed",
    expectCarriedOut: async ({ runtime, queue }, indexKey) => {
      expect(await runtime.status("waiter")).toBeNull();
      expect(await queue.kvGet(indexKey)).toBeNull();
    },
  },
];

describe.each(CASES)("the dashboard's $action of a run that changed while its question was open", (c) => {
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
            // While the first question is open, the run's signal wait is damaged: the plan changes.
            if (dialogs.length === 1) {
              const key = signalWaitKey(Q, "wk");
              await queue.kvPut(key, new Uint8Array(pack({ ...(unpack((await queue.kvGet(key))!) as Record<string, unknown>), step: -1 })));
            }
            await d.accept();
          })();
        });
        await page.goto(`${dashboard.url}#/run/waiter`);
        // Its page cannot load (the listing entry fails its read) and offers the repair and the removal.
        await waitText(page, "main", "its listing entry is damaged");
        await page.click(`button[data-action="${c.action}"]`);
        await waitText(page, "#toast", "the run changed since you looked");
        await waitText(page, "#toast", "review the new plan");
        expect(dialogs).toEqual([expect.stringMatching(c.firstAsked)]);
        // Nothing was written: the run waits on, its entry still damaged.
        expect(await runtime.status("waiter")).toMatchObject({ state: "pending", step: 1 });
        expect(await queue.kvGet(indexKey)).toEqual(new Uint8Array(pack({ headers: 7 })));

        // Asked again, the question says the new plan, and confirmed, it is carried out.
        await page.goto(`${dashboard.url}#/run/waiter`);
        await waitText(page, "main", "its listing entry is damaged");
        await page.click(`button[data-action="${c.action}"]`);
        await waitText(page, c.action === "repair" ? "main" : "#toast", c.carriedOut);
        expect(dialogs[1]).toMatch(c.secondAsked);
        await c.expectCarriedOut(owner, indexKey);
      } finally {
        await browser.close();
      }
    },
    SCENARIO_MS,
  );
});
