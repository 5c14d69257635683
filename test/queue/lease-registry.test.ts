/**
 * @module The lease registry's expiry order: what the reaper reads (earliest
 * expiry, the expired leases in order) against a plain model, under adds,
 * removals, re-adds and extensions, and the bound on what removed leases
 * leave behind in the expiry heap.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExpiryHeap } from "../../runtime/queue/expiry-heap.js";
import { LeaseRegistry } from "../../runtime/queue/lease-registry.js";
import { whilePolluted } from "../support/polluted-prototype.js";

type Op = { kind: "add"; id: number; at: number } | { kind: "remove"; id: number } | { kind: "extend"; id: number; by: number } | { kind: "reap"; now: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("add" as const), id: fc.integer({ min: 0, max: 40 }), at: fc.integer({ min: 0, max: 200 }) }),
  fc.record({ kind: fc.constant("remove" as const), id: fc.integer({ min: 0, max: 40 }) }),
  fc.record({ kind: fc.constant("extend" as const), id: fc.integer({ min: 0, max: 40 }), by: fc.integer({ min: -5, max: 50 }) }),
  fc.record({ kind: fc.constant("reap" as const), now: fc.integer({ min: 0, max: 260 }) }),
);

describe("LeaseRegistry expiry order", () => {
  it("reports the earliest expiry and the expired leases, earliest first, as a model of the live leases does", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), fc.integer({ min: 1, max: 8 }), (ops, limit) => {
        const reg = new LeaseRegistry();
        const model = new Map<string, number>();
        for (const o of ops) {
          const id = o.kind === "reap" ? "" : `j${o.id}`;
          if (o.kind === "add") {
            reg.add(id, "q", o.at, false);
            model.set(id, o.at);
          } else if (o.kind === "remove") {
            reg.remove(id);
            model.delete(id);
          } else if (o.kind === "extend") {
            const e = reg.get(id);
            if (e === undefined) continue;
            reg.extend(e, e.expiresAt + o.by);
            model.set(id, Math.max(model.get(id)!, model.get(id)! + o.by));
          } else {
            // What the reaper does: read the expired leases, then end them.
            const got = reg.expired(o.now, limit);
            const times = got.map((e) => e.expiresAt);
            const due = [...model.values()].filter((t) => t <= o.now).sort((a, b) => a - b);
            expect(times).toEqual(due.slice(0, limit));
            for (const e of got) expect(model.get(e.id)).toBe(e.expiresAt);
            for (const e of got) {
              reg.remove(e.id);
              model.delete(e.id);
            }
          }
          const earliest = model.size === 0 ? undefined : Math.min(...model.values());
          expect(reg.nextExpiry()).toBe(earliest);
          expect(reg.size).toBe(model.size);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("reading the expired leases leaves them in place until they are removed", () => {
    const reg = new LeaseRegistry();
    reg.add("a", "q", 10, false);
    reg.add("b", "q", 5, false);
    reg.add("c", "q", 30, false);
    expect(reg.expired(20, 10).map((e) => e.id)).toEqual(["b", "a"]);
    expect(reg.expired(20, 1).map((e) => e.id)).toEqual(["b"]);
    reg.remove("b");
    expect(reg.expired(20, 10).map((e) => e.id)).toEqual(["a"]);
    expect(reg.nextExpiry()).toBe(10);
  });
});

describe("ExpiryHeap", () => {
  it("holds about twice the live items at most when items keep coming and going", () => {
    const live = new Set<{ expiresAt: number }>();
    const heap = new ExpiryHeap<{ expiresAt: number }>((i) => live.has(i));
    const window: { expiresAt: number }[] = [];
    // Claims and settlements of a steady stream with 50 in flight: one push and one removal each.
    for (let t = 0; t < 100_000; t++) {
      const item = { expiresAt: t + 30_000 };
      live.add(item);
      heap.push(item.expiresAt, item);
      window.push(item);
      if (window.length > 50) {
        live.delete(window.shift()!);
        heap.stale();
      }
    }
    expect(heap.nodeCount).toBeLessThanOrEqual(2 * 1024);
    expect(heap.min()).toBe(window[0]);
    expect(heap.upTo(100_000 + 30_000, 100)).toEqual(window);
  });

  it("keeps items pushed in expiry order out of the binary heap, and merges those pushed out of order with them", () => {
    const live = new Set<{ expiresAt: number }>();
    const heap = new ExpiryHeap<{ expiresAt: number }>((i) => live.has(i));
    const push = (at: number) => {
      const item = { expiresAt: at };
      live.add(item);
      heap.push(at, item);
      return item;
    };
    // A steady stream of one lease duration: every push at or after the one before.
    for (let t = 0; t < 1_000; t++) push(30_000 + t - (t % 3));
    expect(heap.heapNodeCount).toBe(0);
    expect(heap.nodeCount).toBe(1_000);
    // Earlier than the last one pushed: these go to the heap, and still come out in order with the rest.
    const early = [push(5), push(30_500), push(29_999), push(30_500)];
    expect(heap.heapNodeCount).toBe(4);
    expect(heap.min()).toBe(early[0]);
    const due = heap.upTo(30_500, 2_000).map((i) => i.expiresAt);
    expect(due).toEqual([...due].sort((a, b) => a - b));
    expect(due.length).toBe(4 + 501);
    expect(heap.upTo(30_000, 3).map((i) => i.expiresAt)).toEqual([5, 29_999, 30_000]);
    live.delete(early[0]!);
    heap.stale();
    expect(heap.heapNodeCount).toBe(3);
    expect(heap.min()?.expiresAt).toBe(29_999);
  });
});

describe("Ended leases leave the expiry heap", () => {
  it("drops a lease's node when it ends first among those held: a stream settled in claim order holds no more nodes than leases", () => {
    const reg = new LeaseRegistry();
    const window: string[] = [];
    // Claims and settlements of a steady stream with 50 in flight, settled in the order claimed.
    for (let t = 0; t < 5_000; t++) {
      reg.add(`j${t}`, "q", t + 30_000, false);
      window.push(`j${t}`);
      if (window.length > 50) reg.remove(window.shift()!);
      expect(reg.expiryNodes).toBeLessThanOrEqual(51);
    }
    expect(reg.nextExpiry()).toBe(5_000 - 50 + 30_000);
    // Out of order: nodes behind a held lease wait for it, then go with it.
    reg.add("slow", "q", 40_000, false);
    for (let t = 0; t < 200; t++) {
      reg.add(`k${t}`, "q", 40_001 + t, false);
      reg.remove(`k${t}`);
    }
    for (const id of window) reg.remove(id);
    expect(reg.expiryNodes).toBeGreaterThan(200);
    reg.remove("slow");
    expect(reg.expiryNodes).toBe(0);
    expect(reg.nextExpiry()).toBeUndefined();
  });

  it('reads an empty expiry order by its length under a plain "0" on Object.prototype: no expiry, nothing expired, ends that find nothing', async () => {
    const reg = new LeaseRegistry();
    await whilePolluted({ "0": "planted" }, async () => {
      expect(reg.nextExpiry()).toBeUndefined();
      expect(reg.expired(100, 10)).toEqual([]);
      reg.add("a", "q", 10, false);
      reg.remove("a");
      expect(reg.nextExpiry()).toBeUndefined();
      expect(reg.expiryNodes).toBe(0);
    });
  });

  it("gives no expiry to a lease cleared away and then extended", () => {
    const reg = new LeaseRegistry();
    const e = reg.add("a", "q", 10, false);
    expect(reg.holdsEntry(e, "a")).toBe(true);
    reg.clear();
    // Not held any more, as a look-up by its id says.
    expect([reg.holdsEntry(e, "a"), reg.holds("a", e.token)]).toEqual([false, undefined]);
    reg.extend(e, 50);
    expect(reg.nextExpiry()).toBeUndefined();
    expect(reg.expired(100, 10)).toEqual([]);
    expect(reg.expiryNodes).toBe(0);
  });
});

describe("LeaseRegistry entries as their claims' cancel state", () => {
  it("keeps each claim's cancellation apart: a request reaches its own entry's flag and signal, a re-add starts uncancelled, a claim made cancelled starts aborted", () => {
    const reg = new LeaseRegistry();
    const a = reg.add("a", "q", 10, false);
    const b = reg.add("b", "q", 10, false);
    const signalA = a.cancelSignal;
    expect(a.requested).toBe(false);
    a.request(new Error("stop a"));
    a.request(new Error("again"));
    expect(a.requested).toBe(true);
    expect(signalA.aborted).toBe(true);
    expect(signalA.reason).toEqual(new Error("stop a"));
    expect(b.requested).toBe(false);
    expect(b.cancelSignal.aborted).toBe(false);
    // A new claim of the same job is a new entry: the old claim's request does not carry over.
    const again = reg.add("a", "q", 20, false);
    expect(again).not.toBe(a);
    expect(again.requested).toBe(false);
    expect(again.cancelSignal.aborted).toBe(false);
    const flagged = reg.add("c", "q", 10, true);
    expect(flagged.requested).toBe(true);
    expect(flagged.cancelSignal.aborted).toBe(true);
    expect(String(flagged.cancelSignal.reason)).toContain("cancellation of job c was requested");
  });
});
