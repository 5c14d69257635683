/**
 * @module `Queue.open` resolves every queue's settings once: the copy it
 * checked before any IO is the one the queue runs with, not a second
 * resolution of the same options.
 */
import { describe, expect, it, vi } from "vitest";

const built = vi.hoisted(() => ({ count: 0 }));

vi.mock("../../runtime/queue/config.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../runtime/queue/config.js")>();
  class CountedQueueConfigs extends real.QueueConfigs {
    constructor(...args: ConstructorParameters<typeof real.QueueConfigs>) {
      super(...args);
      built.count++;
    }
  }
  return { ...real, QueueConfigs: CountedQueueConfigs };
});

const { MemoryStore, Queue } = await import("taquba");

describe("Queue.open", () => {
  it("resolves the queue settings once, and runs with them", async () => {
    built.count = 0;
    const q = await Queue.open(new MemoryStore(), "q", { defaultQueueConfig: { maxAttempts: 4 }, queueConfigs: { slow: { maxAttempts: 9 } } });
    expect(built.count).toBe(1);
    await q.enqueue("slow", new Uint8Array([1]));
    await q.enqueue("fast", new Uint8Array([2]));
    expect((await q.claim("slow"))?.maxAttempts).toBe(9);
    expect((await q.claim("fast"))?.maxAttempts).toBe(4);
    await q.close();
  });
});
