/**
 * @module Attacks on the queue's payload limit (`OpenOptions.maxPayloadBytes`)
 * past the paths payload-limit.test.ts covers: the bytes a wake attaches to
 * a job (they live in its record, rewritten by every later transition and
 * copied into each claim), and the settlements other than `ack` (`nack`,
 * `deadLetter`, `ackClaimingNext`) and `cancelJob` whose effects carry a
 * payload over it. Each refusal is a `PayloadTooLargeError` that changes
 * nothing durable: the job keeps its state, claim and attached bytes.
 */
import { describe, expect, it } from "vitest";
import { MAX_KV_VALUE_SIZE, MemoryStore, PayloadTooLargeError, SettlementEffects, type ClaimedJob } from "taquba";
import { openQueue } from "./helpers.js";

const bytes = (n: number, fill = 1) => new Uint8Array(n).fill(fill);

async function refusal(p: Promise<unknown>): Promise<PayloadTooLargeError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PayloadTooLargeError);
  return err as PayloadTooLargeError;
}

describe("the payload limit past enqueues", () => {
  it("bounds the bytes a wake attaches: one byte over is refused naming them and the job stays scheduled; at the limit it is woken", async () => {
    const store = new MemoryStore();
    // Attached bytes are bounded by the larger of maxPayloadBytes and 256 KiB (a KV value's limit, a signal's).
    const max = 300 * 1024;
    const opts = { store, maxPayloadBytes: max, flushIntervalMs: 0 };
    const { queue } = await openQueue(opts);
    const later = Date.now() + 3_600_000;
    const a = (await queue.enqueue("a", bytes(1), { runAt: later })).jobId;
    const b = (await queue.enqueue("b", bytes(1), { runAt: later })).jobId;
    await queue.flush();
    const walPuts = queue.engineStats.walPuts;
    const viaQueue = await refusal(queue.wakeScheduled("a", a, bytes(max + 1)));
    expect([viaQueue.queueName, viaQueue.size, viaQueue.max, viaQueue.part]).toEqual(["a", max + 1, max, "attached"]);
    expect(viaQueue.message).toMatch(
      new RegExp(`bytes attached to a wake of a job of queue "a" are ${max + 1} bytes, more than the ${max} .*the job was not woken`),
    );
    const viaWake = await refusal(queue.wake(b, bytes(2 * max)));
    expect([viaWake.queueName, viaWake.part]).toEqual(["b", "attached"]);
    await queue.flush();
    expect(queue.engineStats.walPuts, "nothing written").toBe(walPuts);
    expect(await queue.claim("a")).toBeNull();
    expect(await queue.claim("b")).toBeNull();
    // At the limit: woken, claimed with its attached bytes, also after a reopen.
    expect(await queue.wakeScheduled("a", a, bytes(max, 7))).toBe(true);
    expect(await queue.wake(b)).toBe("woken");
    await queue.close();
    const again = (await openQueue(opts)).queue;
    const claimed = (await again.claim("a"))!;
    expect(Buffer.from(claimed.attached!).equals(bytes(max, 7))).toBe(true);
    expect((await again.claim("b"))!.attached).toBeUndefined();
    await again.close();
  });

  it("takes attached bytes up to 256 KiB below a smaller maxPayloadBytes (a workflow signal of that size wakes its run), not one byte more", async () => {
    const { queue } = await openQueue({ maxPayloadBytes: 100 });
    const later = Date.now() + 3_600_000;
    const id = (await queue.enqueue("s", bytes(1), { runAt: later })).jobId;
    const err = await refusal(queue.wake(id, bytes(MAX_KV_VALUE_SIZE + 1)));
    expect([err.size, err.max, err.part]).toEqual([MAX_KV_VALUE_SIZE + 1, MAX_KV_VALUE_SIZE, "attached"]);
    expect(await queue.wake(id, bytes(MAX_KV_VALUE_SIZE, 5))).toBe("woken");
    expect(Buffer.from((await queue.claim("s"))!.attached!).equals(bytes(MAX_KV_VALUE_SIZE, 5))).toBe(true);
    await queue.close();
  });

  it("refuses nack, deadLetter, ackClaimingNext and cancelJob whose effects enqueue one byte over, applying nothing: the claim still held, the job still pending", async () => {
    const { queue } = await openQueue({ maxPayloadBytes: 100 });
    await queue.enqueue("w", bytes(10));
    const pending = (await queue.enqueue("p", bytes(10))).jobId;
    const job: ClaimedJob = (await queue.claim("w"))!;
    const over = () => new SettlementEffects().kvPut("k", bytes(1)).enqueue("next", bytes(101));
    const refusals = [
      await refusal(queue.nack(job, "boom", over())),
      await refusal(queue.deadLetter(job, "boom", over())),
      await refusal(queue.ackClaimingNext(job, over(), { index: 0, reserve: () => true })),
      await refusal(queue.cancelJob(pending, over())),
    ];
    for (const e of refusals) expect([e.queueName, e.size, e.max, e.part]).toEqual(["next", 101, 100, "payload"]);
    expect(await queue.kvGet("k")).toBeNull();
    expect(await queue.claim("next")).toBeNull();
    // Nothing applied: the claim is still held and settles; the pending job is still there.
    await queue.ack(job, new SettlementEffects().enqueue("next", bytes(100)));
    expect((await queue.claim("next"))!.payload).toEqual(bytes(100));
    expect((await queue.claim("p"))!.id).toBe(pending);
    await queue.close();
  });
});
