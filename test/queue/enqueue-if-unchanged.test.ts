/**
 * @module `Queue.enqueueIfUnchanged`: an enqueue with effects that commits
 * only while caller keys hold the values read before it, checked in its
 * own commit (a child run's start, held to its parent's current step).
 */
import { describe, expect, it } from "vitest";
import { SettlementEffects, ValidationError } from "taquba";
import { enc, openQueue } from "./helpers.js";

describe("Queue.enqueueIfUnchanged", () => {
  it("commits the job and its effects while every key holds its value, an absent key included", async () => {
    const { queue } = await openQueue();
    await queue.kvPut("guard", enc("v1"));
    const out = await queue.enqueueIfUnchanged("q", enc("job"), {}, new SettlementEffects().kvPut("side", enc("s")), [
      { key: "guard", value: enc("v1") },
      { key: "absent", value: null },
    ]);
    expect(out).not.toBe("raced");
    expect(await queue.view().job(out === "raced" ? "" : out.outcome.jobId)).toMatchObject({ state: "pending" });
    expect(await queue.kvGet("side")).toEqual(enc("s"));
    await queue.close();
  });

  it('writes nothing and answers "raced" when a key changed or appeared since it was read', async () => {
    const { queue } = await openQueue();
    await queue.kvPut("guard", enc("v2"));
    await queue.kvPut("appeared", enc("x"));
    for (const unchanged of [[{ key: "guard", value: enc("v1") }], [{ key: "appeared", value: null }]]) {
      const out = await queue.enqueueIfUnchanged("q", enc("job"), { jobId: "j1" }, new SettlementEffects().kvPut("side", enc("s")), unchanged);
      expect(out).toBe("raced");
    }
    expect(await queue.view().job("j1")).toBeNull();
    expect(await queue.kvGet("side")).toBeNull();
    await queue.close();
  });

  it("refuses a malformed key before writing anything", async () => {
    const { queue } = await openQueue();
    await expect(queue.enqueueIfUnchanged("q", enc("job"), { jobId: "j1" }, new SettlementEffects(), [{ key: "", value: null }])).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(await queue.view().job("j1")).toBeNull();
    await queue.close();
  });
});
