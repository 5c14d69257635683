/**
 * Child workflows across repeated SIGKILLs: a worker process running a
 * batch that fans out to child runs and joins them is killed at random
 * points (while children start, run, end, and while the join waits) and
 * started again over the same directory. In the end every child exists
 * once, the batch received each child's end exactly once (its result lists
 * every document once, in order), and no child bookkeeping is left.
 */
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "taquba";
import { killLives, startScript } from "../support/child-script.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";

const script = fileURLToPath(new URL("./fixtures/family-worker.ts", import.meta.url));
const N = 6;
const KILLS = 4;
const tempDir = useTempDirs("taquba-children-crash-");
/** A family worker made progress: it rendered a child or joined one. */
const familyProgressed = (lines: readonly string[]) => lines.some((l) => l.startsWith("render ") || l.startsWith("join "));

describe("child workflows across crashes", () => {
  it("each child exists once and its end reaches the batch exactly once, across SIGKILLs", { timeout: loadLimitTimeout(180_000) }, () =>
    withinLoadLimit(180_000, async () => {
      const rng = testRandom("child workflows across crashes");
      let dir = "";
      let kills = 0;
      // A quick first life can end the batch before its kill lands, and later lives find it ended and
      // submit nothing: then a fresh batch in a fresh directory, so that the checks below follow kills.
      for (let batch = 0; batch < 5 && kills === 0; batch++) {
        dir = await tempDir();
        kills = await killLives(script, [dir, String(N)], { lives: KILLS, rng, maxDelayMs: 150, progressed: familyProgressed });
      }
      const last = startScript(script, [dir, String(N)], { env: rng.childEnv() });
      expect((await last.exited).code, last.stderr()).toBe(0);
      expect(kills).toBeGreaterThan(0);

      const store = new LocalStore(dir);
      const queue = await Queue.open(store, "family");
      const runtime = WorkflowRuntime.builder(queue, store, { runStep: async () => StepOutcome.fail("unused") }, NoopTerminalHook).build();
      try {
        const end = await runtime.outcome("crash");
        expect(end?.status).toBe("succeeded");
        const result = JSON.parse(new TextDecoder().decode(end!.result)) as { rendered: string[]; pages: number };
        expect(result.rendered).toEqual(Array.from({ length: N }, (_, i) => `doc-${i}`));
        expect(result.pages).toBe(N);
        const runs = await runtime.listRuns({ limit: 100 });
        expect(runs.runs.map((r) => r.runId).sort()).toEqual(["crash", ...Array.from({ length: N }, (_, i) => `crash-s0-${i}`)].sort());
        for (let i = 0; i < N; i++) expect((await runtime.status(`crash-s0-${i}`))?.state).toBe("terminated");
        expect((await queue.kvScan("workflow/children/")).entries).toEqual([]);
        expect((await queue.kvScan("workflow/signal-buf/")).entries).toEqual([]);
      } finally {
        await queue.close();
      }
    }),
  );
});
