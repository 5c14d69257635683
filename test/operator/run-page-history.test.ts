/**
 * @module The run page (and `taquba runs show`) of a run of more steps
 * than one read of its history holds (`HISTORY_ENTRIES_PER_PAGE`): each
 * load reads one page of its history entries, says how far (`historyPage`)
 * and where to go on from, and `history_after` (`--history-after`) reads
 * the next; the step the run is on closes every page. The pages together
 * hold what the whole history holds, each step's retry mark judged as the
 * whole history judges it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, StepOutcome } from "../../runtime/index.js";
import { HISTORY_ENTRIES_PER_PAGE } from "../../runtime/workflow/runs/inspect-run.js";
import { openOwnerRuntime } from "./fixtures/signal-owner.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dashboardOver } from "./fixtures/store-dashboard.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-run-page-history-");
const Q = "workflow-steps";
const STEPS = 250;
/** Its history entries: steps 0..STEPS; the step it waits in, STEPS + 1, has none yet. */
const ENTRIES = STEPS + 1;
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(120_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

/** The steps a timeline's attempts name, in order. */
const attemptSteps = (timeline: readonly { kind: string; step?: number }[] | undefined) =>
  (timeline ?? []).filter((e) => e.kind === "attempt").map((e) => e.step);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe("the run page of a run of many steps", () => {
  it(
    "reads one page of its history a load, and the next ones on asking",
    async () => {
      expect(ENTRIES).toBeGreaterThan(2 * HISTORY_ENTRIES_PER_PAGE);
      const dir = await tempDir();
      const store = new LocalStore(dir);
      // Steps 0..STEPS-1 go on at once; step STEPS goes on to wait for a signal.
      const { queue, runtime } = await openOwnerRuntime(store, async (s) =>
        s.stepNumber < STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.continueOnSignal(s.payload, "never", 3_600_000),
      );
      const worker = runtime.spawn();
      stops.push(async () => {
        await worker.shutdown();
        await queue.close();
      });
      await runtime.submit({ runId: "r", input: enc.encode("x") });
      await until("the run waits at its last step", async () => (await runtime.status("r"))?.step === STEPS + 1, SCENARIO_MS / 2);
      await queue.flush();

      // The runtime's pages: together, the whole history's steps, each judged the same.
      const view = runtime.view();
      const whole = (await view.inspectRun("r"))!;
      const pages = [];
      for (let after: number | undefined; ; ) {
        const p = (await view.inspectRunPage("r", after))!;
        pages.push(p);
        // The step the run is on closes every page.
        expect(p.steps.at(-1)).toMatchObject({ step: STEPS + 1 });
        if (p.historyPage.next === undefined) break;
        after = p.historyPage.next;
      }
      expect(pages.map((p) => p.historyPage)).toEqual([
        { count: HISTORY_ENTRIES_PER_PAGE, next: HISTORY_ENTRIES_PER_PAGE - 1 },
        { after: HISTORY_ENTRIES_PER_PAGE - 1, count: HISTORY_ENTRIES_PER_PAGE, next: 2 * HISTORY_ENTRIES_PER_PAGE - 1 },
        { after: 2 * HISTORY_ENTRIES_PER_PAGE - 1, count: ENTRIES - 2 * HISTORY_ENTRIES_PER_PAGE },
      ]);
      expect(pages.flatMap((p) => p.steps.slice(0, -1))).toEqual(whole.steps.slice(0, -1));
      expect(pages.map((p) => p.steps.at(-1))).toEqual([whole.steps.at(-1), whole.steps.at(-1), whole.steps.at(-1)]);
      expect(pages.map((p) => p.stepsDropped)).toEqual([whole.stepsDropped, whole.stepsDropped, whole.stepsDropped]);
      await expect(view.inspectRunPage("r", -1)).rejects.toThrow(/step number/);

      // The operator's run detail (the run page, `runs show --json`).
      const { session, ops, dashboard } = await dashboardOver(dir, store, Q, stops);
      await session.reader(true);
      const first = await ops.run("r");
      expect(first?.historyPage).toEqual({ count: HISTORY_ENTRIES_PER_PAGE, next: HISTORY_ENTRIES_PER_PAGE - 1 });
      expect(attemptSteps(first?.timeline)).toEqual([...range(0, HISTORY_ENTRIES_PER_PAGE)]);
      const last = await ops.run("r", undefined, 2 * HISTORY_ENTRIES_PER_PAGE - 1);
      expect(last?.historyPage).toEqual({ after: 2 * HISTORY_ENTRIES_PER_PAGE - 1, count: ENTRIES - 2 * HISTORY_ENTRIES_PER_PAGE });
      expect(attemptSteps(last?.timeline)).toEqual(range(2 * HISTORY_ENTRIES_PER_PAGE, ENTRIES));
      expect(last?.step).toBe(STEPS + 1);

      // The dashboard's API: the same, and a history_after that is no step refused.
      const page = async (query: string) => fetch(new URL(`/api/runs/r${query}`, dashboard.url));
      expect(((await (await page("")).json()) as { historyPage?: unknown }).historyPage).toEqual(first?.historyPage);
      const second = (await (await page(`?history_after=${HISTORY_ENTRIES_PER_PAGE - 1}`)).json()) as {
        historyPage?: unknown;
        timeline?: { kind: string; step?: number }[];
      };
      expect(second.historyPage).toEqual(pages[1]!.historyPage);
      expect(attemptSteps(second.timeline)).toEqual(range(HISTORY_ENTRIES_PER_PAGE, 2 * HISTORY_ENTRIES_PER_PAGE));
      for (const bad of ["abc", "-1", "1.5", "01"]) expect((await page(`?history_after=${bad}`)).status, bad).toBe(400);
    },
    SCENARIO_MS,
  );
});
