/**
 * @module The queue's payload limit (`OpenOptions.maxPayloadBytes`): a job
 * payload over it is refused with `PayloadTooLargeError` on every enqueue
 * path, offloaded or not, before anything is staged or written; absurd
 * limits are refused at open before any store request.
 */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_BYTES_LIMIT,
  MemoryStore,
  PayloadTooLargeError,
  Queue,
  SettlementEffects,
  ValidationError,
  type ObjectStore,
  type OpenOptions,
} from "taquba";
import { openQueue } from "./helpers.js";

async function keysOf(store: ObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) out.push(o.key);
  return out.sort();
}

const bytes = (n: number, fill = 1) => new Uint8Array(n).fill(fill);

/** Expects `p` to reject with a `PayloadTooLargeError` for `queueName`, `size` and `max`, saying what to do. */
async function refused(p: Promise<unknown>, queueName: string, size: number, max: number): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PayloadTooLargeError);
  const e = err as PayloadTooLargeError;
  expect(e.code).toBe("PAYLOAD_TOO_LARGE");
  expect([e.queueName, e.size, e.max]).toEqual([queueName, size, max]);
  expect(e.message).toContain(`queue "${queueName}" is ${size} bytes, more than the ${max}`);
  expect(e.message).toMatch(/nothing was enqueued.*object of its own.*larger maxPayloadBytes/);
}

describe("Queue.open checks maxPayloadBytes", () => {
  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1, 0, 1.5, 1e30, MAX_PAYLOAD_BYTES_LIMIT + 1, "64"])("refuses %s before any store request", async (max) => {
    const store = new MemoryStore();
    const err = await Queue.open(store, "q", { maxPayloadBytes: max as number }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/OpenOptions\.maxPayloadBytes must be an integer from 1 to 1073741824/);
    expect(await keysOf(store)).toEqual([]);
  });

  it("takes 1 and the largest limit", async () => {
    for (const maxPayloadBytes of [1, MAX_PAYLOAD_BYTES_LIMIT]) {
      const { queue } = await openQueue({ maxPayloadBytes });
      await queue.enqueue("jobs", bytes(1));
      await queue.close();
    }
  });
});

describe("the payload limit at enqueue", () => {
  it(`refuses a payload over the default ${DEFAULT_MAX_PAYLOAD_BYTES} bytes before writing anything, offloaded or not`, async () => {
    for (const payloadOffloadBytes of [null, 1024]) {
      const store = new MemoryStore();
      const { queue } = await openQueue({ store, payloadOffloadBytes });
      await queue.flush();
      const before = await keysOf(store);
      const walPuts = queue.engineStats.walPuts;
      await refused(queue.enqueue("videos", bytes(DEFAULT_MAX_PAYLOAD_BYTES + 1)), "videos", DEFAULT_MAX_PAYLOAD_BYTES + 1, DEFAULT_MAX_PAYLOAD_BYTES);
      await queue.flush();
      expect(queue.engineStats.walPuts).toBe(walPuts);
      expect(await keysOf(store)).toEqual(before);
      expect(await queue.claim("videos")).toBeNull();
      await queue.close();
    }
  });

  it("takes a payload at the limit and refuses one byte more, on every enqueue path, then goes on", async () => {
    const store = new MemoryStore();
    // Offloaded past 100 bytes: the limit covers offloaded payloads too.
    const opts: OpenOptions & { store: ObjectStore } = { store, maxPayloadBytes: 1000, payloadOffloadBytes: 100 };
    const { queue } = await openQueue(opts);
    await queue.enqueue("a", bytes(1000));
    const payloads = await queue.listPayloadObjects();
    expect(payloads).toHaveLength(1);
    await refused(queue.enqueue("a", bytes(1001)), "a", 1001, 1000);
    // A batch is refused whole: its first job, within the limit, is not enqueued either.
    await refused(
      queue.enqueueBatch([
        { queueName: "a", payload: bytes(10, 2) },
        { queueName: "b", payload: bytes(1001) },
      ]),
      "b",
      1001,
      1000,
    );
    await refused(queue.enqueueWithEffects("c", bytes(1001), {}, new SettlementEffects()), "c", 1001, 1000);
    await refused(queue.enqueueWithEffects("c", bytes(5), {}, new SettlementEffects().enqueue("d", bytes(2000))), "d", 2000, 1000);
    expect(await queue.listPayloadObjects()).toEqual(payloads);
    // A settlement whose effects carry one is refused and applies nothing: the claim is still held.
    const job = (await queue.claim("a"))!;
    expect(job.payload).toEqual(bytes(1000));
    await refused(queue.ack(job, new SettlementEffects().kvPut("k", bytes(1)).enqueue("e", bytes(1001))), "e", 1001, 1000);
    expect(await queue.kvGet("k")).toBeNull();
    expect(await queue.claim("a")).toBeNull();
    await queue.ack(job, new SettlementEffects().enqueue("e", bytes(1000, 3)));
    expect((await queue.view().stats("b"))?.pending ?? 0).toBe(0);
    expect(await queue.claim("b")).toBeNull();
    expect(await queue.claim("c")).toBeNull();
    await queue.close();

    // Reopened: what was enqueued is there, and later enqueues are checked against the limit given now.
    const again = (await openQueue({ ...opts, maxPayloadBytes: 2000 })).queue;
    expect((await again.claim("e"))?.payload).toEqual(bytes(1000, 3));
    await again.enqueue("f", bytes(2000));
    await refused(again.enqueue("f", bytes(2001)), "f", 2001, 2000);
    expect((await again.claim("f"))?.payload).toEqual(bytes(2000));
    await again.close();
  });
});
