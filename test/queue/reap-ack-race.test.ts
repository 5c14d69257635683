/**
 * @module Leases that all expire at once, reaped while acks of the same
 * claims are on their way, with records held and paged, over a store with
 * latency; absurd lease durations refused; the clock gone back a day
 * reaps nothing. Each claim ends acked or requeued, never both or neither.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, MemoryStore, ValidationError, withLatency, type OpenOptions } from "taquba";
import { HEAVY_TEST_MS } from "../support/load.js";
import { enc, openQueue } from "./helpers.js";

const N = 300;

describe.each([
  ["records held", false, {}],
  ["records held, a store with latency", true, {}],
  ["records paged", false, { recordCacheBytes: 1024, engineOptions: { checkpointWalObjects: 1 } }],
] as const)("expired leases reaped while acks race them (%s)", (_name, latency, extra) => {
  it("each claim ends acked or requeued once", { timeout: HEAVY_TEST_MS }, async () => {
    const store = latency ? withLatency(new MemoryStore(), { ms: 1, jitterMs: 1 }) : new MemoryStore();
    const { queue, clock } = await openQueue({ store, ...(extra as OpenOptions) });
    for (let i = 0; i < N; i++) await queue.enqueue("w", enc(`p${i}`), { maxAttempts: 5 });
    const jobs = await queue.claimBatch("w", N, 1);
    expect(jobs).toHaveLength(N);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e30, 0.5, 2 ** 53]) {
      await expect(queue.claimBatch("w", 1, bad)).rejects.toBeInstanceOf(ValidationError);
    }
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 1e30, -1]) await expect(jobs[0]!.lease.ensureAtLeast(bad)).rejects.toBeInstanceOf(ValidationError);
    // Every lease is past due, then the clock goes back a day: nothing is reaped.
    clock.advance(2);
    clock.set(clock.now() - 86_400_000);
    await queue.runMaintenance();
    expect((await queue.view().stats("w")).claimed).toBe(N);
    clock.set(clock.now() + 86_400_000 + 10);
    const ack = (j: (typeof jobs)[number]) =>
      queue.ack(j).then(
        () => "acked",
        (e: unknown) => (e instanceof ClaimLostError ? "lost" : `unexpected ${String(e)}`),
      );
    // Half the acks start before the reaper, half after it.
    const first = jobs.slice(0, N / 2).map(ack);
    const reaped = queue.runMaintenance().then(() => "reaped");
    const results = await Promise.all([...first, reaped, ...jobs.slice(N / 2).map(ack)]);
    expect(results.filter((x) => x.startsWith("unexpected"))).toEqual([]);
    const acked = results.filter((x) => x === "acked").length;
    const lost = results.filter((x) => x === "lost").length;
    expect(acked + lost).toBe(N);
    expect(await queue.view().stats("w")).toMatchObject({ done: acked, pending: lost, claimed: 0 });
    // The requeued ones are claimed again, once each, on their second attempt.
    const again = await queue.claimBatch("w", N, 60_000);
    expect(again).toHaveLength(lost);
    expect(again.every((j) => j.attempt === 2)).toBe(true);
    await queue.close();
  });
});
