/**
 * @module `TaqubaClient.signal` takes its payload as the call saw it: a
 * caller that changes its array right after the call still signals the
 * bytes it passed (the request is written after awaits), and a view whose
 * bytes are gone (a detached buffer) is refused naming the signal, with no
 * request written, instead of delivering an empty payload.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, TaqubaClient } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { refusal } from "../support/refusal.js";
import { until } from "../support/until.js";
import { openOwner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const tempDir = useTempDirs("taquba-client-signal-bytes-");
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

describe("TaqubaClient.signal takes its payload at the call", () => {
  it("delivers the bytes passed though the caller changes them after the call, and refuses a detached view", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    try {
      const detached = enc("gone");
      structuredClone(detached.buffer, { transfer: [detached.buffer] });
      const gone = await refusal(() => client.signal("pay:gone", detached));
      expect(gone.message).toMatch(/the payload of signal "pay:gone" is a view of a detached or shrunk ArrayBuffer/);
      // Nothing was buffered for it.
      expect(await client.clearSignal("pay:gone")).toBe(false);

      await client.submit({ runId: "waiter", input: enc({ wait: "pay:1" }) });
      await until("the waiter waits", async () => (await owner.runtime.status("waiter"))?.step === 1, 10_000);
      const payload = enc("paid");
      const sent = client.signal("pay:1", payload);
      payload.fill(0x20);
      expect(await sent).toBe("delivered");
      expect(dec((await client.wait("waiter")).outcome?.result)).toBe(JSON.stringify("paid"));
    } finally {
      await client.close();
      await owner.stop();
    }
  });
});
