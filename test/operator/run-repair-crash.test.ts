/**
 * @module A repair through the owner's inbox survives the owner's SIGKILL:
 * killed before its commit reached the store, the next owner applies the
 * request; killed after, before the answer, the next owner finds the
 * applied mark and answers from it. Either way the client's one request
 * gets the repair's outcome, the run ends failed once, the other run is
 * untouched, and a second repair is refused as not damaged.
 */
import { pack, unpack } from "msgpackr";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, NoopTerminalHook, Queue, RunNotDamagedError, serveClients, StepOutcome, TaqubaClient, WorkflowRuntime, type ObjectStore } from "taquba";
import { stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const OWNER = fileURLToPath(new URL("./fixtures/repair-owner.ts", import.meta.url));
const tempDir = useTempDirs("taquba-repair-crash-");
const Q = "workflow-steps";
const enc = new TextEncoder();

async function open(store: ObjectStore) {
  const queue = await Queue.open(store, "app", { flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
  return { queue, runtime };
}

describe("a repair across the owner's SIGKILL", () => {
  it.each(["before", "after"] as const)("killed %s its commit's put", { timeout: loadLimitTimeout(90_000) }, async (window) => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    {
      const { queue, runtime } = await open(store);
      for (const id of ["victim", "other"]) await runtime.submit({ runId: id, input: enc.encode("x") });
      const key = stepPointerKey(Q, "victim");
      await queue.kvPut(key, new Uint8Array(pack({ ...(unpack((await queue.kvGet(key))!) as Record<string, unknown>), step: -1 })));
      await queue.close();
    }
    const child = startScript(OWNER, [dir, window]);
    await child.waitFor((lines) => lines.includes("ready"));
    const client = await TaqubaClient.open(store, { name: "app", queueName: Q, timeoutMs: 60_000, pollIntervalMs: 200 });
    try {
      const repaired = client.repairRun("victim");
      const exit = await child.exited;
      expect(exit.signal, child.stderr()).toBe("SIGKILL");
      expect(child.lines).toContain(`K ${window}`);
      expect(backgroundFailures(child)).toEqual([]);

      const { queue, runtime } = await open(store);
      const inbox = serveClients(queue, runtime, { store, listIntervalMs: 50 });
      try {
        expect(await repaired).toMatchObject({ runId: "victim", action: "ended_failed", dryRun: false, damaged: [{ record: "step_pointer" }] });
        // Killed after the commit's put: the mark was durable, so the request is answered from it, not applied again.
        expect(inbox.stats.replayed, "requests answered from their mark").toBe(window === "after" ? 1 : 0);
        expect((await runtime.wait("victim")).termination).toMatchObject({
          status: "failed",
          error: expect.stringMatching(/^repaired by an operator: its step pointer/),
        });
        expect(await runtime.status("other")).toMatchObject({ state: "pending", step: 0 });
        await expect(client.repairRun("victim")).rejects.toThrow(RunNotDamagedError);
        await expect(client.repairRun("other")).rejects.toMatchObject({ code: "RUN_NOT_DAMAGED", reason: "active" });
      } finally {
        await inbox.stop();
        await queue.close();
      }
    } finally {
      await client.close();
    }
  });
});
