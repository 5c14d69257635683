/**
 * @module An owner killed (SIGKILL) between a removal's last commit and its
 * last memo clear, with a step of the removed run having written memo
 * entries between the removal's first clear and that commit: the entries
 * outlive the process, and no run is left to remove again. The commit
 * records that the clear is owed, and the next worker start over the store
 * pays it: no memo object of the run is left, nor the record.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "taquba";
import { ChildScenario } from "../support/child-scenario.js";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout, scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const CHILD = fileURLToPath(new URL("./fixtures/removal-memo-kill.ts", import.meta.url));
const tempDir = useTempDirs("taquba-removal-memo-kill-");
const SCENARIO_MS = 60_000;
const OWED = "workflow/memo-owed/workflow-steps/r";

/** The object keys of run "r"'s memo entries and replay records, on any memo prefix. */
async function memoObjectsOfR(store: LocalStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list("")) if (/\/(memos|step-outputs)\/r\//.test(o.key)) keys.push(o.key);
  return keys;
}

describe("an owner killed between a removal's last commit and its last memo clear", () => {
  it("leaves the clear owed, and the next worker start pays it", { timeout: loadLimitTimeout(SCENARIO_MS) }, async () => {
    const dir = await tempDir();
    const scenario = ChildScenario.stretchedByLoad(SCENARIO_MS);
    try {
      const owner = scenario.track("owner", startScript(CHILD, [dir]));
      await scenario.line("owner", owner, (l) => l === "committed", "the removal's last commit", scaledForLoad(40_000));
      expect((await scenario.exit("owner", owner, scaledForLoad(10_000))).signal).toBe("SIGKILL");
      expect(owner.lines).toContain("wrote");
      expect(owner.lines).not.toContain("removed without being killed");

      const store = new LocalStore(dir);
      // What the step wrote before the commit stayed: the removal's clear after it never ran.
      expect((await memoObjectsOfR(store)).length).toBeGreaterThan(0);
      const queue = await Queue.open(store, "wf", { flushIntervalMs: 1 });
      const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
      try {
        expect(await runtime.status("r")).toBeNull();
        const worker = runtime.spawn();
        // Without the owed record, nothing ever clears them.
        await scenario.until("the owed memo clear paid", async () => (await memoObjectsOfR(store)).length === 0, scaledForLoad(20_000));
        await scenario.until("the owed record deleted", async () => (await queue.kvGet(OWED)) === null, scaledForLoad(20_000));
        await worker.shutdown();
      } finally {
        await runtime.close();
      }
    } finally {
      await scenario.stop();
    }
  });
});
