/**
 * @module The run page of a parent of more children than one read holds
 * (`CHILD_ENTRIES_PER_CHECK`, 256): each load checks one read's worth of
 * its children's entries for damage, says how far it checked and where to
 * go on from (`childEntries`), and the dashboard's `children_after` checks
 * the next ones, where a damaged entry past the first read is found (and
 * the page, in the headless browser where one is found, links them). A
 * repair still checks them all.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, StepOutcome } from "../../runtime/index.js";
import { childEntryKey } from "../../runtime/workflow/records/kv-keys.js";
import { CHILD_ENTRIES_PER_CHECK } from "../../runtime/workflow/runs/repair.js";
import { openOwnerRuntime } from "./fixtures/signal-owner.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dashboardOver } from "./fixtures/store-dashboard.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { waitText } from "./dashboard-page.js";

const tempDir = useTempDirs("taquba-run-page-children-");
const Q = "workflow-steps";
const CHILDREN = 300;
const BATCH = 100;
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(120_000);
const browserFound = findBrowser();
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

describe("the run page of a parent of many children", () => {
  it(
    "checks one read's worth of their entries a load, and the next ones on asking",
    async () => {
      expect(CHILDREN).toBeGreaterThan(CHILD_ENTRIES_PER_CHECK);
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const ids: string[] = [];
      // The parent starts its children a batch a step, each child waiting for a signal (so its entry stays), then waits.
      const { queue, runtime } = await openOwnerRuntime(store, async (s) => {
        const text = new TextDecoder().decode(s.payload);
        if (text === "child") return StepOutcome.continueOnSignal(s.payload, `never-${s.runId}`, 3_600_000);
        const from = s.stepNumber * BATCH;
        if (from >= CHILDREN) return StepOutcome.continueOnSignal(s.payload, "parent-never", 3_600_000);
        const started = await Promise.all(
          Array.from({ length: BATCH }, (_, i) => s.children.start({ input: enc.encode("child"), key: `c${from + i}`, parentClose: "abandon" })),
        );
        ids.push(...started.map((c) => c.runId));
        return StepOutcome.continueNow(s.payload);
      });
      const worker = runtime.spawn();
      stops.push(async () => {
        await worker.shutdown();
        await queue.close();
      });
      await runtime.submit({ runId: "p", input: enc.encode("parent") });
      await until("the parent started its children", async () => (await runtime.status("p"))?.step === CHILDREN / BATCH, SCENARIO_MS / 2);
      // The last child in key order: past the first read of the entries.
      const sorted = [...ids].sort();
      const last = sorted.at(-1)!;
      const key = childEntryKey(Q, "p", last);
      await queue.kvPut(key, new Uint8Array(pack({ ...(unpack((await queue.kvGet(key))!) as object), parentClose: "sometimes" })));
      await queue.flush();

      const { session, ops, dashboard } = await dashboardOver(dir, store, Q, stops);
      await session.reader(true);
      const first = await ops.run("p");
      const boundary = sorted[CHILD_ENTRIES_PER_CHECK - 1]!;
      expect(first?.damage).toBeUndefined();
      expect(first?.childEntries).toEqual({ count: CHILD_ENTRIES_PER_CHECK, next: boundary });
      const next = await ops.run("p", boundary);
      expect(next?.childEntries).toEqual({ after: boundary, count: CHILDREN - CHILD_ENTRIES_PER_CHECK });
      expect(next?.damage).toEqual([expect.objectContaining({ record: "child_entry", detail: expect.stringContaining(`child run ${JSON.stringify(last)}`) })]);

      // The dashboard's API: the same, and a children_after that is no run id refused.
      const page = async (query: string) => fetch(new URL(`/api/runs/p${query}`, dashboard.url));
      expect(((await (await page("")).json()) as { childEntries?: unknown }).childEntries).toEqual({ count: CHILD_ENTRIES_PER_CHECK, next: boundary });
      const after = (await (await page(`?children_after=${encodeURIComponent(boundary)}`)).json()) as { damage?: unknown[] };
      expect(after.damage).toHaveLength(1);
      expect((await page("?children_after=no%20id")).status).toBe(400);

      // The page says how far it checked and links the next ones, where the damage and its repair show.
      if (!("missing" in browserFound)) {
        const browser = await launchBrowser(browserFound.path);
        try {
          const tab = await browser.browser.newPage();
          await tab.goto(`${dashboard.url}#/run/p`);
          await waitText(tab, "#child-checks", `Checked ${CHILD_ENTRIES_PER_CHECK} of its children's entries for damage (the first); more follow`);
          expect(await tab.$("#run-damage")).toBeNull();
          await tab.click('#child-checks a[data-action="next-children"]');
          await waitText(tab, "#run-damage", `child run ${JSON.stringify(last)}`);
          await waitText(
            tab,
            "#child-checks",
            `Checked ${CHILDREN - CHILD_ENTRIES_PER_CHECK} of its children's entries for damage (those after child ${boundary})`,
          );
          expect(await tab.$('#run-damage button[data-action="repair"]')).not.toBeNull();
          expect(await tab.$('#child-checks a[data-action="next-children"]')).toBeNull();
        } finally {
          await browser.close();
        }
      }

      // The repair checks every entry.
      expect(await runtime.repairRun("p", { dryRun: true })).toMatchObject({ action: "ended_failed", damaged: [{ record: "child_entry" }] });
    },
    SCENARIO_MS,
  );
});
