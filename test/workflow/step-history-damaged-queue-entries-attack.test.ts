/**
 * @module Attack on a workflow step whose job's attempt history in the
 * queue holds entries that are no attempts (a damaged store): the step's
 * next attempt reads its earlier attempts to write the run's history. It
 * used to map every stored entry: a null one failed the settlement with a
 * TypeError, and a NaN time went into the step's history entry, which an
 * inspection then refused as damaged. The entries that are attempts are
 * kept, the run ends, and its history reads.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StepError, StepOutcome, WriteBatch } from "taquba";
import { historyKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { advanceUntil, dec, enc, openEnv, runnerOf } from "./helpers.js";

const packr = new Packr({ useRecords: false });

describe("a step whose queue attempt history holds entries that are no attempts", () => {
  for (const [what, damaged, kept] of [
    ["a null entry", null, false],
    ["an entry with a NaN time", { attempt: 1, recordedAt: Number.NaN, outcome: "retried" }, false],
    // An attempt still: kept, its claim time left out (it started when it ended).
    ["an entry with a NaN claim time", { attempt: 1, claimedAt: Number.NaN, recordedAt: 5, outcome: "retried" }, true],
  ] as const) {
    it(`${what}: the next attempt settles, and the run's history reads`, async () => {
      const store = new MemoryStore();
      let calls = 0;
      const runner = runnerOf(async () => {
        if (++calls === 1) throw StepError.transient("not yet");
        return StepOutcome.succeed(enc("done"));
      });
      const first = await openEnv(runner, { store });
      const { jobId } = await first.runtime.submit({ input: enc("x"), runId: "r" });
      await advanceUntil(first.clock, first.clock.now() + 100, async () => calls === 1, "the first attempt");
      await advanceUntil(first.clock, first.clock.now() + 100, async () => (await first.queue.view().attemptHistory(jobId)).length === 1, "its entry");
      const stored = await first.queue.view().attemptHistory(jobId);
      await first.stop();
      const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "wf/"), ENGINE_PREFIX));
      await engine.commit(new WriteBatch().put(historyKey(jobId), packr.pack([damaged, ...stored])));
      await engine.close();

      const env = await openEnv(runner, { store, clock: first.clock });
      try {
        await advanceUntil(env.clock, env.clock.now() + 120_000, async () => (await env.runtime.status("r"))?.state === "terminated", "the run's end");
        expect(dec((await env.runtime.wait("r")).outcome?.result)).toBe("done");
        const step = (await env.runtime.inspectRun("r"))?.steps.at(-1);
        expect(step?.attempts.map((a) => [a.attempt, a.outcome])).toEqual([...(kept ? [[1, "retried"]] : []), [1, "retried"], [2, "succeeded"]]);
        expect(step?.attempts.every((a) => Number.isFinite(a.startedAtMs) && Number.isFinite(a.endedAtMs))).toBe(true);
      } finally {
        await env.stop();
      }
    });
  }
});
