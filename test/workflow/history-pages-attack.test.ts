/**
 * @module A run's history read in pages (`WorkflowView.inspectRunPage`)
 * while the run grows between the pages, and pages asked for after steps
 * no page named: past the run's last entry, at the last entry, past the
 * width of a step's key (ten digits) and at the largest exact integer. The
 * pages read on from where the last one stopped, nothing skipped or read
 * twice and each step judged as the whole history judges it; a cursor past
 * the end reads an empty page, closed by the step the run is on (or, once
 * it ended, by what the whole history holds after its entries), with no
 * next page; a cursor that is no step number is refused.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, ValidationError } from "taquba";
import { HISTORY_ENTRIES_PER_PAGE } from "../../runtime/workflow/runs/inspect-run.js";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

describe("a run's history in pages", () => {
  it("grows between pages and is read on without a gap or a repeat; cursors past its end read an empty page", async () => {
    let target = 150;
    // Steps go on at once up to `target`, then wait for a signal that lets them go on to the next target.
    const env = await openEnv(
      runnerOf(async (s) => (s.stepNumber < target ? StepOutcome.continueNow(s.payload) : StepOutcome.continueOnSignal(s.payload, "grow", 3_600_000))),
    );
    try {
      await env.runtime.submit({ input: enc("x"), runId: "r" });
      const atStep = (n: number) => until(async () => (await env.runtime.status("r"))?.step === n, `the run at step ${n}`, 30_000);
      await atStep(151);
      const view = env.runtime.view();
      const pages = [(await view.inspectRunPage("r"))!];
      expect(pages[0]!.historyPage).toEqual({ count: HISTORY_ENTRIES_PER_PAGE, next: HISTORY_ENTRIES_PER_PAGE - 1 });

      // The run goes on by 170 steps before the next page is read.
      target = 320;
      await env.runtime.signal("grow", enc("go"));
      await atStep(321);
      for (let after = pages[0]!.historyPage.next; after !== undefined; after = pages.at(-1)!.historyPage.next) {
        pages.push((await view.inspectRunPage("r", after))!);
      }
      expect(pages.map((p) => p.historyPage)).toEqual([
        { count: 100, next: 99 },
        { after: 99, count: 100, next: 199 },
        { after: 199, count: 100, next: 299 },
        { after: 299, count: 21 },
      ]);
      const whole = (await view.inspectRun("r"))!;
      const read = pages.flatMap((p) => p.steps.slice(0, -1));
      expect(read.map((s) => s.step)).toEqual(Array.from({ length: 321 }, (_, i) => i));
      // Every step's fields (its retry mark among them) as the whole history has them; the page read before
      // the run went on closed with the step it was on then.
      expect(read).toEqual(whole.steps.slice(0, -1));
      expect(pages[0]!.steps.at(-1)).toMatchObject({ step: 151 });
      for (const p of pages.slice(1)) expect(p.steps.at(-1)).toEqual(whole.steps.at(-1));

      // Cursors past the end: at the last entry, past it, past a step key's ten digits, the largest exact integer.
      for (const after of [320, 321, 5_000, 9_999_999_999, 10_000_000_000, 10 ** 15, Number.MAX_SAFE_INTEGER]) {
        const p = (await view.inspectRunPage("r", after))!;
        expect(p.historyPage, `after ${after}`).toEqual({ after, count: 0 });
        expect(p.steps, `after ${after}`).toEqual([whole.steps.at(-1)]);
        expect(p.stepsDropped).toBe(whole.stepsDropped);
        expect(p.state).toBe(whole.state);
      }
      // Ended (cancelled in its wait): the pages hold the whole history's steps still, and a page past the end
      // holds what the whole history has after its last entry (the step the run ended in, if it wrote none).
      expect(await env.runtime.cancel("r")).toBe(true);
      const ended = (await view.inspectRun("r"))!;
      expect(ended.state).toBe("cancelled");
      const endedPages = [(await view.inspectRunPage("r"))!];
      for (let after = endedPages[0]!.historyPage.next; after !== undefined; after = endedPages.at(-1)!.historyPage.next) {
        endedPages.push((await view.inspectRunPage("r", after))!);
      }
      const tail = ended.steps.slice(321);
      expect(endedPages.flatMap((p) => p.steps.slice(0, p.steps.length - tail.length))).toEqual(ended.steps.slice(0, 321));
      for (const p of endedPages) expect(p.end).toEqual(ended.end);
      const past = (await view.inspectRunPage("r", 10 ** 15))!;
      expect(past.historyPage).toEqual({ after: 10 ** 15, count: 0 });
      expect(past.steps).toEqual(tail);
      expect(past.end).toEqual(ended.end);

      // Cursors that are no step number.
      for (const after of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "5" as unknown as number]) {
        await expect(view.inspectRunPage("r", after), String(after)).rejects.toBeInstanceOf(ValidationError);
      }
    } finally {
      await env.stop();
    }
  }, 120_000);
});
