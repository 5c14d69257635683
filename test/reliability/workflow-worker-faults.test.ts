/**
 * @module A workflow worker rides out store faults on its claim path: a
 * failed read of an offloaded step payload (> 256 KiB) is logged and the
 * claim retried with backoff, and the worker keeps running. Against memory,
 * a local directory and S3 (s3rver).
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { dec, enc, openEnv, runnerOf } from "../workflow/helpers.js";
import { failing, isPending, useBackends, within } from "./workflow-support.js";

const backends = useBackends();

describe("workflow worker under store faults on its claim path", () => {
  for (const backend of backends) {
    it(`${backend.name}: a failed read of an offloaded payload is logged and retried; the worker keeps running`, async () => {
      const store = failing(await backend.make(), "get", (k) => k.includes("payloads/"), 2);
      const env = await openEnv(
        runnerOf(async (s) => StepOutcome.succeed(enc(`${s.payload.byteLength}`))),
        { store },
      );
      const big = new Uint8Array(300 * 1024).fill(7);
      await env.runtime.submit({ input: big, runId: "big" });
      const end = await within(15_000, "the run over an offloaded payload ending", env.runtime.wait("big"));
      expect(end.termination.status).toBe("succeeded");
      expect(dec(end.outcome!.result)).toBe(String(big.byteLength));
      expect(store.failed).toBe(2);
      expect(env.logged.length).toBeGreaterThanOrEqual(1);
      // Still running: a later run is worked too, and the worker has not stopped.
      expect(await isPending(env.worker!.done)).toBe(true);
      await env.runtime.submit({ input: enc("small"), runId: "after" });
      expect((await within(15_000, "a later run ending", env.runtime.wait("after"))).termination.status).toBe("succeeded");
      await env.stop();
    });
  }
});
