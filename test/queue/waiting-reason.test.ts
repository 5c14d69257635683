/**
 * @module Why flow control holds a job back, as the owner's views show it:
 * a full concurrency key, a rate limit until a time, a debounce window; a
 * reader in another process sees the debounce window (it is in the record)
 * and nothing it cannot know.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, QueueReader } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);

describe("waiting reasons", () => {
  it("names the full concurrency key, the rate limit's end and the debounce window, and clears them when the job may run", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const queue = await Queue.open(store, "q", {
      clock,
      flushIntervalMs: 0,
      queueConfigs: {
        conc: { concurrency: { limit: 1, key: "{tenant}" } },
        rate: { rateLimit: { limit: 1, periodMs: 500, key: "{tenant}" } },
      },
    });
    const a1 = await queue.enqueue("conc", enc("1"), { headers: { tenant: "acme" } });
    const a2 = await queue.enqueue("conc", enc("2"), { headers: { tenant: "acme" } });
    const g1 = await queue.enqueue("conc", enc("3"), { headers: { tenant: "globex" } });
    expect((await queue.view().job(a2.jobId))?.waiting).toBeUndefined();
    const first = await queue.claim("conc");
    expect(first?.id).toBe(a1.jobId);
    expect((await queue.view().job(a2.jobId))?.waiting).toEqual({ reason: "concurrency", key: "acme", limit: 1, held: 1 });
    expect((await queue.view().job(g1.jobId))?.waiting).toBeUndefined();
    const pending = await queue.view().listJobs("conc", "pending");
    expect(pending.items.map((j) => j.waiting?.reason)).toEqual(["concurrency", undefined]);
    await queue.ack(first!);
    expect((await queue.view().job(a2.jobId))?.waiting).toBeUndefined();

    const r1 = await queue.enqueue("rate", enc("1"), { headers: { tenant: "acme" } });
    const r2 = await queue.enqueue("rate", enc("2"), { headers: { tenant: "acme" } });
    expect((await queue.claim("rate"))?.id).toBe(r1.jobId);
    expect(await queue.claim("rate")).toBeNull();
    expect((await queue.view().job(r2.jobId))?.waiting).toEqual({ reason: "rate_limit", key: "acme", limit: 1, periodMs: 500, until: 1_000_500 });
    clock.advance(500);
    expect((await queue.view().job(r2.jobId))?.waiting).toBeUndefined();

    const d = await queue.enqueue("plain", enc("d"), { debounce: { key: "k", periodMs: 200 } });
    const debounced = { reason: "debounced", key: "k", until: clock.now() + 200 };
    expect((await queue.view().job(d.jobId))?.waiting).toEqual(debounced);
    await queue.flush();
    const reader = await QueueReader.open(store, "q");
    expect((await reader.job(d.jobId))?.waiting).toEqual(debounced);
    // The reader cannot see the owner's claims: it shows no concurrency reason rather than a wrong one.
    expect((await reader.job(a2.jobId))?.waiting).toBeUndefined();
    await reader.close();
    await queue.close();
  });
});
