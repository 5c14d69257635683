/**
 * @module A claim while `Object.prototype` holds a job record's optional
 * field names (a library merged a parsed `{"__proto__": ...}` into one):
 * the decoded record reads only its own fields. A polluted `payloadRef`
 * once made the claim look for a payload object of that name and
 * dead-letter the job; a polluted `headers` or `lastError` went into the
 * claimed job.
 */
import { describe, expect, it } from "vitest";
import { decodeJob, encodeJob } from "../../runtime/queue/record.js";
import { enc, openQueue } from "./helpers.js";
import { whilePolluted } from "../support/polluted-prototype.js";

const POLLUTION = {
  payloadRef: "01HZZZZZZZZZZZZZZZZZZZZZZZ",
  payloadSize: 3,
  headers: { injected: "1" },
  lastError: "inherited error",
  attached: new Uint8Array([9]),
  wokenAt: 5,
  cancelRequested: true,
  dedupKey: "inherited-dedup",
};

describe("a job record decoded under a polluted Object.prototype", () => {
  it("claims the job's own payload, headers and fields, and acks it", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("own payload"), { headers: { mine: "yes" } });
    await whilePolluted(POLLUTION, async () => {
      const job = await queue.claim("q");
      expect(job).not.toBeNull();
      expect(new TextDecoder().decode(job!.payload)).toBe("own payload");
      expect({ ...job!.headers }).toEqual({ mine: "yes" });
      expect(Object.hasOwn(job!, "lastError")).toBe(false);
      expect(Object.hasOwn(job!, "attached")).toBe(false);
      expect(Object.hasOwn(job!, "wokenAt")).toBe(false);
      expect(job!.cancelSignal.aborted).toBe(false);
      await queue.ack(job!);
    });
    const stats = await queue.view().stats("q");
    expect(stats.dead).toBe(0);
    expect(stats.done).toBe(1);
    await queue.close();
  });

  it("decodes to the same fields and encodes to the same bytes as without the pollution", async () => {
    const record = {
      id: "01HAAAAAAAAAAAAAAAAAAAAAAA",
      queue: "q",
      state: "pending" as const,
      seq: "01HAAAAAAAAAAAAAAAAAAAAAAA",
      priority: 0,
      payload: enc("p"),
      attempts: 0,
      maxAttempts: 3,
      enqueuedAt: 1,
    };
    const bytes = encodeJob(record);
    const clean = decodeJob("j/x", bytes);
    await whilePolluted(POLLUTION, async () => {
      const decoded = decodeJob("j/x", bytes);
      for (const k of Object.keys(POLLUTION)) expect(decoded[k as keyof typeof decoded], k).toBeUndefined();
      expect(Buffer.from(encodeJob(decoded)).equals(Buffer.from(bytes))).toBe(true);
    });
    expect(Object.getPrototypeOf(clean)).toBe(Object.prototype);
  });
});
