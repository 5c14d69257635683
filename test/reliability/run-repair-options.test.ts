/**
 * @module `repairRun`'s options from a caller who gets them wrong: a
 * misspelt `dryRun` (`dryrun`, `dry_run`), a dry run that is not a boolean,
 * or options that are not an object. Each must be refused with a
 * `ValidationError` and write nothing: a dry run asked for with a typo
 * must never mend (and so end) the run for real.
 */
import { describe, expect, it } from "vitest";
import { pack } from "msgpackr";
import { MemoryStore, StepOutcome, TaqubaClient, ValidationError } from "taquba";
import { stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import { enc, openEnv, runnerOf } from "../workflow/helpers.js";

const Q = "workflow-steps";

const BAD_OPTIONS: readonly unknown[] = [{ dryrun: true }, { dry_run: true }, { dryRun: true, force: true }, { dryRun: 1 }, { dryRun: "yes" }, null, "dry", 7];

describe("repairRun's options", () => {
  it("refuses misspelt or mistyped options in the owner and leaves the damaged run as it was", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    try {
      await env.runtime.submit({ runId: "damaged", input: enc("x") });
      const garbage = new Uint8Array(pack("not a pointer"));
      await env.queue.kvPut(stepPointerKey(Q, "damaged"), garbage);
      for (const opts of BAD_OPTIONS) {
        await expect(env.runtime.repairRun("damaged", opts as { dryRun?: boolean }), JSON.stringify(opts)).rejects.toThrow(ValidationError);
      }
      expect(await env.queue.kvGet(stepPointerKey(Q, "damaged"))).toEqual(garbage);
      expect(await env.runtime.repairRun("damaged", { dryRun: true })).toMatchObject({ action: "ended_failed", dryRun: true });
      expect(await env.queue.kvGet(stepPointerKey(Q, "damaged"))).toEqual(garbage);
      expect(await env.runtime.repairRun("damaged", undefined)).toMatchObject({ action: "ended_failed", dryRun: false });
    } finally {
      await env.stop();
    }
  });

  it("refuses them in a client before any request", async () => {
    const client = await TaqubaClient.open(new MemoryStore(), { name: "app", queueName: Q, timeoutMs: 1000 });
    try {
      for (const opts of BAD_OPTIONS) {
        await expect(client.repairRun("damaged", opts as { dryRun?: boolean }), JSON.stringify(opts)).rejects.toThrow(ValidationError);
      }
    } finally {
      await client.close();
    }
  });
});
