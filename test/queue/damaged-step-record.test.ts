/**
 * @module A workflow step whose job record is damaged while no worker runs:
 * the next worker's claim sets the job aside as dead (`record_corrupted`),
 * and the dead-step reconciliation ends its run as failed with that error,
 * instead of the run waiting for ever; a run submitted beside it finishes.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, StepOutcome, WriteBatch } from "taquba";
import { jobKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { enc, openEnv, runnerOf, until } from "../workflow/helpers.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);

describe("a workflow step whose job record is damaged", () => {
  it("ends its run as failed with the reason record_corrupted; a run beside it completes", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const runner = runnerOf(async () => StepOutcome.succeed(enc("ok")));
    const env = await openEnv(runner, { store, clock, start: false });
    await env.runtime.submit({ input: enc("x"), runId: "damaged" });
    await env.runtime.submit({ input: enc("y"), runId: "sound" });
    const pending = await env.queue.view().listJobs("workflow-steps", "pending");
    const victim = pending.items.find((j) => j.headers["workflow.run_id"] === "damaged");
    expect(victim).toBeDefined();
    await env.stop();

    // Its attempt count rewritten as text, as a damaged store or another writer would leave it.
    const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "wf/"), ENGINE_PREFIX));
    const rec = general.unpack(engine.get(jobKey(victim!.id))!) as Record<string, unknown>;
    rec.attempts = "0";
    await engine.commit(new WriteBatch().put(jobKey(victim!.id), new Uint8Array(general.pack(rec))));
    await engine.close();

    const env2 = await openEnv(runner, { store, clock });
    try {
      await until(async () => (await env2.runtime.status("damaged"))?.state === "terminated", "the damaged run ended");
      expect(await env2.runtime.status("damaged")).toMatchObject({
        status: "failed",
        errorKind: "dead_lettered",
        finalStep: 0,
        error: expect.stringMatching(/^record_corrupted: the stored record of job .* could not be read \(.*its attempts is not a number/),
      });
      await until(async () => (await env2.runtime.status("sound"))?.state === "terminated", "the sound run ended");
      expect(await env2.runtime.status("sound")).toMatchObject({ status: "succeeded" });
    } finally {
      await env2.stop();
    }
  });
});
