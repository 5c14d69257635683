/**
 * @module Many concurrent calls on one TaqubaClient: no listener piles up on
 * a shared signal (Node warns past ten), every call is answered, and close
 * wakes every wait in progress at once.
 */
import { ClosedError, MemoryStore, TaqubaClient } from "taquba";
import { describe, expect, it } from "vitest";
import { openOwner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const CALLS = 200;

describe("TaqubaClient under concurrent calls", () => {
  it("answers 200 concurrent submissions and waits without a MaxListenersExceededWarning, and close ends the waits", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    const store = new MemoryStore();
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 120_000 });
    try {
      const ids = Array.from({ length: CALLS }, (_, i) => `c-${i}`);
      const outs = await Promise.all(ids.map((runId) => client.submit({ runId, input: enc({ wait: `key-${runId}` }) })));
      expect(outs.every((o) => o.newlySubmitted)).toBe(true);
      // Every run waits for a signal: these waits sleep until close.
      const waits = ids.map((runId) =>
        client.wait(runId).then(
          () => "ended",
          (e: unknown) => e,
        ),
      );
      const status = await Promise.all(ids.slice(0, 20).map((runId) => client.status(runId)));
      expect(status.every((s) => s !== null && s.state !== "terminated")).toBe(true);
      await client.close();
      const ends = await Promise.all(waits);
      expect(ends.every((e) => e instanceof ClosedError)).toBe(true);
      // Warnings are emitted on a later tick.
      await new Promise<void>((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message)).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await client.close();
      await owner.stop();
    }
  });
});
