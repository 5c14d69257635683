/**
 * @module A queue that stops on its own (fenced by a newer writer, or
 * poisoned by a store write that keeps failing) says so once at error
 * level, exposes why (`closedReason`, `onClosed`), and rejects every later
 * call with an error that carries the cause and does not advise reopening
 * a fenced queue.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { ClosedError, FencedError } from "../../runtime/errors.js";
import { Queue } from "../../runtime/queue/queue.js";
import { MemoryStore } from "../../runtime/store/memory-store.js";
import { withFaults } from "../../runtime/store/with-faults.js";

const bytes = new Uint8Array([1]);

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a queue that stops on its own", () => {
  it("after a fence: logs once, exposes the FencedError, and every later call carries it", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const store = new MemoryStore();
    const reasons: Array<Error | undefined> = [];
    const old = await Queue.open(store, "app", { onClosed: (r) => reasons.push(r) });
    await old.enqueue("q", bytes);
    const owner = await Queue.open(store, "app");
    await expect(old.enqueue("q", bytes)).rejects.toBeInstanceOf(FencedError);
    expect(old.closedReason).toBeInstanceOf(FencedError);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(FencedError);
    const later = await old.enqueue("q", bytes).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(later).toBeInstanceOf(ClosedError);
    expect((later as ClosedError).cause).toBeInstanceOf(FencedError);
    expect((later as Error).message).toMatch(/fenced by a newer writer/);
    expect((later as Error).message).not.toMatch(/reopen/);
    await expect(old.kvPut("k", bytes)).rejects.toBeInstanceOf(ClosedError);
    const fenceLogs = errors.mock.calls.filter((c) => String(c[0]).includes('queue "app" stopped'));
    expect(fenceLogs).toHaveLength(1);
    expect(String(fenceLogs[0]![0])).toMatch(/fenced this one/);
    // Said once in all: no second record of the same fence on the console.
    expect(errors.mock.calls.filter((c) => /fenc/i.test(String(c[0])))).toHaveLength(1);
    let late: Error | undefined | null = null;
    old.onClosed((r) => (late = r));
    await new Promise((r) => setTimeout(r, 0));
    expect(late).toBeInstanceOf(FencedError);
    await old.close();
    expect(reasons).toHaveLength(1);
    // The new owner is untouched.
    await owner.enqueue("q", bytes);
    await owner.close();
  });

  it("after a store write that keeps failing: the cause is the store failure", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const faults = withFaults(new MemoryStore(), { failureRate: 0, seed: 1, ops: ["put"], failAfterWriteRate: 0 });
    const queue = await Queue.open(faults, "app", { flushIntervalMs: 0 });
    let reason: Error | undefined;
    queue.onClosed((r) => (reason = r));
    faults.failureRate = 1;
    await expect(queue.enqueue("q", bytes)).rejects.toBeInstanceOf(ClosedError);
    expect(queue.closedReason).toBeInstanceOf(ClosedError);
    expect(reason).toBe(queue.closedReason);
    const later = await queue.kvPut("k", bytes).then(
      () => undefined,
      (e: unknown) => e as ClosedError,
    );
    expect(later?.cause).toBe(queue.closedReason);
    expect(errors.mock.calls.filter((c) => String(c[0]).includes('queue "app" stopped'))).toHaveLength(1);
    await queue.close();
  });

  it("a plain close tells onClosed with no reason", async () => {
    const queue = await Queue.open(new MemoryStore(), "app");
    const seen: Array<Error | undefined> = [];
    queue.onClosed((r) => seen.push(r));
    await queue.close();
    expect(seen).toEqual([undefined]);
    expect(queue.closedReason).toBeUndefined();
  });
});

describe("the two close notifications", () => {
  it("the closed signal aborts when close starts, onClosed is called once the engine closed", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q", { flushIntervalMs: 1 });
    await queue.enqueue("work", bytes);
    const order: string[] = [];
    queue.closedSignal.addEventListener("abort", () => order.push("signal"));
    queue.onClosed(() => order.push("onClosed"));
    const closing = queue.close();
    // The signal fires within close's first synchronous part, so waiters never wait on the flush.
    expect(order).toEqual(["signal"]);
    await closing;
    expect(order).toEqual(["signal", "onClosed"]);
    const again = await Queue.open(store, "q");
    expect((await again.view().stats("work")).pending).toBe(1);
    await again.close();
  });
});
