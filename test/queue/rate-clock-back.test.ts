/**
 * @module A clock that jumps backwards: a claim logged after the new `now`
 * counts as made now, so a rate-limited key is held one period at most, not
 * for the length of the jump; the limit still holds over that period. The
 * same for windows a restarted owner seeds from the store, and for the end
 * a reader in another process shows.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, QueueReader } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const PERIOD = 1000;
const JUMP = 3_600_000;
const T = 5_000_000_000;

const open = (store: MemoryStore, clock: MockClock) =>
  Queue.open(store, "q", { clock, flushIntervalMs: 0, queueConfigs: { jobs: { rateLimit: { limit: 2, periodMs: PERIOD } } } });

describe("rate limits when the clock goes back", () => {
  it("hold a key one period after the jump, not the jump's length", async () => {
    const clock = new MockClock(T);
    const queue = await open(new MemoryStore(), clock);
    for (let i = 0; i < 5; i++) await queue.enqueue("jobs", enc(`j${i}`));
    expect((await queue.claimBatch("jobs", 5)).length).toBe(2);
    clock.set(T - JUMP);
    expect(await queue.claimBatch("jobs", 5)).toEqual([]);
    clock.advance(PERIOD - 1);
    expect(await queue.claimBatch("jobs", 5)).toEqual([]);
    clock.advance(1);
    expect((await queue.claimBatch("jobs", 5)).length).toBe(2);
    // The limit still holds after the jump.
    clock.advance(PERIOD - 1);
    expect(await queue.claimBatch("jobs", 5)).toEqual([]);
    clock.advance(1);
    expect((await queue.claimBatch("jobs", 5)).length).toBe(1);
    await queue.close();
  });

  it("a restarted owner seeds the windows written before the jump as claims made now", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T);
    const first = await open(store, clock);
    for (let i = 0; i < 5; i++) await first.enqueue("jobs", enc(`j${i}`));
    expect((await first.claimBatch("jobs", 5)).length).toBe(2);
    await first.flush();
    await first.close();
    clock.set(T - JUMP);
    const queue = await open(store, clock);
    // The two claims before the restart were requeued by recovery; the window still counts them.
    expect(await queue.claimBatch("jobs", 5)).toEqual([]);
    const waiting = (await queue.view().listJobs("jobs", "pending")).items[0]!;
    expect((await queue.view().job(waiting.id))?.waiting).toMatchObject({ reason: "rate_limit", until: clock.now() + PERIOD });
    await queue.flush();
    const reader = await QueueReader.open(store, "q", { clock });
    expect((await reader.job(waiting.id))?.waiting).toMatchObject({ reason: "rate_limit", until: clock.now() + PERIOD });
    await reader.close();
    clock.advance(PERIOD);
    expect((await queue.claimBatch("jobs", 5)).length).toBe(2);
    await queue.close();
  });
});
