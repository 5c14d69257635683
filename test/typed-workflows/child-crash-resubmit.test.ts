/**
 * A batch id submitted again after its first run ended, across repeated
 * SIGKILLs: the first run ends undisturbed, then worker processes running
 * the second run (which fans out to children of its own and joins them)
 * are killed at random points and started again over the same directory.
 * In the end the second run started each of its children once, under ids
 * that carry its stored submission (every resumed delivery read the same
 * one), received each end exactly once, and never touched the first run's
 * children.
 */
import { describe, expect, it } from "vitest";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "taquba";
import { killLives, startScript } from "../support/child-script.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";

const script = fileURLToPath(new URL("./fixtures/family-worker.ts", import.meta.url));
const N = 5;
const KILLS = 4;
const tempDir = useTempDirs("taquba-children-resubmit-");
/** A family worker made progress: it rendered a child or joined one. */
const familyProgressed = (lines: readonly string[]) => lines.some((l) => l.startsWith("render ") || l.startsWith("join "));

async function openReader(dir: string) {
  const store = new LocalStore(dir);
  const queue = await Queue.open(store, "family");
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async () => StepOutcome.fail("unused") }, NoopTerminalHook).build();
  return { queue, runtime };
}

describe("a batch id submitted again after its end, across crashes", () => {
  it("the new run's children exist once each, apart from the first run's, and each end reaches it once", { timeout: loadLimitTimeout(240_000) }, () =>
    withinLoadLimit(240_000, async () => {
      const dir = await tempDir();
      const marker = join(await tempDir(), "first-run");
      const rng = testRandom("a batch id submitted again after its end, across crashes");
      let firstAt = 0;
      const first = startScript(script, [dir, String(N)], { env: rng.childEnv() });
      expect((await first.exited).code, first.stderr()).toBe(0);
      {
        const { queue, runtime } = await openReader(dir);
        const run = await runtime.inspectRun("crash");
        expect(run?.state).toBe("succeeded");
        firstAt = run!.submittedAtMs;
        await writeFile(marker, String(firstAt));
        await queue.close();
      }

      const kills = await killLives(script, [dir, String(N), marker], { lives: KILLS, rng, maxDelayMs: 150, progressed: familyProgressed });
      const last = startScript(script, [dir, String(N), marker], { env: rng.childEnv() });
      expect((await last.exited).code, last.stderr()).toBe(0);
      expect(kills).toBeGreaterThan(0);

      const { queue, runtime } = await openReader(dir);
      try {
        const run = await runtime.inspectRun("crash");
        expect(run?.state).toBe("succeeded");
        // The second run, not the first.
        expect(run?.submittedAtMs).toBeGreaterThan(firstAt);
        const end = await runtime.outcome("crash");
        const result = JSON.parse(new TextDecoder().decode(end!.result)) as { rendered: string[]; pages: number };
        expect(result.rendered).toEqual(Array.from({ length: N }, (_, i) => `doc-${i}`));
        expect(result.pages).toBe(N);
        const ids = (await runtime.listRuns({ limit: 100 })).runs.map((r) => r.runId);
        const firstChildren = Array.from({ length: N }, (_, i) => `crash-s0-${i}`);
        const secondChildren = ids.filter((id) => /^crash-s0-\d+-p/.test(id));
        // One submission names every child of the second run: each exists once.
        const submissions = new Set(secondChildren.map((id) => id.replace(/^crash-s0-\d+-p/, "")));
        expect(submissions.size, ids.join(" ")).toBe(1);
        const [submission] = submissions;
        expect(secondChildren.sort()).toEqual(Array.from({ length: N }, (_, i) => `crash-s0-${i}-p${submission}`).sort());
        expect(ids.sort()).toEqual(["crash", ...firstChildren, ...secondChildren].sort());
        for (const id of [...firstChildren, ...secondChildren]) expect((await runtime.status(id))?.state).toBe("terminated");
        expect((await queue.kvScan("workflow/children/")).entries).toEqual([]);
        expect((await queue.kvScan("workflow/signal-buf/")).entries).toEqual([]);
      } finally {
        await queue.close();
      }
    }),
  );
});
