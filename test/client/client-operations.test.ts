/**
 * @module The operator calls of `TaqubaClient` against an owner over a
 * local directory: listings and histories read from the bucket, retries
 * applied by the owner through the inbox, and the owner's refusals rebuilt
 * as the runtime's own error classes.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, RunNotFoundError, RunNotRetryableError, TaqubaClient, ValidationError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { openOwner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const tempDir = useTempDirs("taquba-client-ops-");
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

describe("TaqubaClient operator calls", () => {
  it("lists, inspects and retries runs through the owner", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    try {
      await client.submit({ runId: "ok", input: enc({ n: 1 }) });
      await client.wait("ok");
      await client.submit({ runId: "bad", input: enc({ fail: "broken" }) });
      await client.wait("bad");
      await client.submit({ runId: "waits", input: enc({ wait: "k-1" }) });
      await until("waits is listed as waiting", async () => (await client.listRuns({ state: "awaiting_signal" })).runs.length === 1, 10_000);

      const all = await client.listRuns();
      expect(all.runs.map((r) => [r.runId, r.state])).toEqual([
        ["waits", "awaiting_signal"],
        ["bad", "failed"],
        ["ok", "succeeded"],
      ]);
      expect(all.runs[0]!.signal?.key).toBe("k-1");
      expect((await client.listRuns({ state: "failed" })).runs[0]).toMatchObject({ runId: "bad", error: "broken", errorKind: "runner" });
      const history = await client.inspectRun("bad");
      expect(history!.steps[0]).toMatchObject({ step: 0, attempts: [{ attempt: 1, outcome: "failed", error: "broken" }], retryable: true });
      expect(await client.inspectRun("nobody")).toBeNull();

      // Refusals come back as the runtime's classes, with the reason.
      const active = await client.retryRun("waits").catch((e: unknown) => e);
      expect(active).toBeInstanceOf(RunNotRetryableError);
      expect(active).toMatchObject({ runId: "waits", reason: "active" });
      await expect(client.retryRun("ok")).rejects.toMatchObject({ reason: "succeeded" });
      await expect(client.retryRun("nobody")).rejects.toBeInstanceOf(RunNotFoundError);
      await expect(client.retryRun("bad", { fromStep: 5 })).rejects.toMatchObject({ reason: "no_such_step" });
      const debounce = { key: "ops", periodMs: 60_000 };
      await client.submit({ runId: "first", input: enc({ n: 2 }), options: { debounce } });
      await client.submit({ runId: "last", input: enc({ n: 3 }), options: { debounce } });
      const superseded = await client.retryRun("first").catch((e: unknown) => e);
      expect(superseded).toBeInstanceOf(RunNotRetryableError);
      expect(superseded).toMatchObject({ runId: "first", reason: "superseded" });
      expect(await client.cancel("last")).toBe(true);
      await expect(client.retryJob("bad")).rejects.toBeInstanceOf(ValidationError);
      // Bad input is refused before anything is written.
      await expect(client.retryRun("bad", { fromStep: -1 })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.listRuns({ limit: 0 })).rejects.toBeInstanceOf(ValidationError);

      // A cancelled waiter re-opened at the step it waited at waits for its signal again.
      expect(await client.cancel("waits")).toBe(true);
      expect((await client.wait("waits")).termination.status).toBe("cancelled");
      expect(await client.retryRun("waits")).toMatchObject({ runId: "waits", step: 1 });
      await until("waits waits again", async () => (await client.listRuns({ state: "awaiting_signal" })).runs.length === 1, 10_000);
      expect(await client.signal("k-1", enc("paid"))).toBe("delivered");
      const end = await client.wait("waits");
      expect(end.termination.status).toBe("succeeded");
      const again = await client.inspectRun("waits");
      expect(again!.redrives[0]).toMatchObject({ step: 1, replaced: { status: "cancelled" } });
      expect(again!.end).toMatchObject({ status: "succeeded" });
      expect(await client.listGroups()).toEqual({ groups: [] });
    } finally {
      await client.close();
      await owner.stop();
    }
  });
});
