/**
 * @module `walCohorts` under faults: cohorts sealed early whose puts fail
 * once and are retried (the put lost on its way, or stored and then reported
 * failed), several objects on their way at once; and a close while cohorts
 * are on their way. Every commit settles; each one that resolved is read back
 * after a reopen, in order within its committer's chain; none is read back
 * that did not resolve unless it was on its way when the close came.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, type ObjectStore, WriteBatch } from "taquba";
import { declarePutsContend } from "../../runtime/store/put-contention.js";
import { GatedStore } from "../support/gated-store.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** `inner` whose first put of each WAL object fails: before it reaches the store, or after it was stored. */
function failingFirstWalPut(inner: ObjectStore, stored: boolean): { store: ObjectStore; failed: string[] } {
  const failed: string[] = [];
  const store: ObjectStore = {
    get: (k) => inner.get(k),
    delete: (k) => inner.delete(k),
    list: (p, o) => inner.list(p, o),
    put: async (k, b, o) => {
      if (!k.startsWith("wal/") || failed.includes(k)) return inner.put(k, b, o);
      failed.push(k);
      if (stored) await inner.put(k, b, o);
      throw new Error(`connection reset while storing ${k}`);
    },
  };
  return { store, failed };
}

/** `chains` committers each committing `depth` batches in turn (the next once the previous resolved); what resolved, by chain. */
function chains(engine: Engine, count: number, depth: number): { done: Promise<PromiseSettledResult<void>[]>; resolved: number[] } {
  const resolved = Array.from({ length: count }, () => 0);
  const run = async (c: number) => {
    for (let d = 0; d < depth; d++) {
      await engine.commit(new WriteBatch().put(`c/${String(c).padStart(3, "0")}/${d}`, enc(`${c}.${d}`)));
      resolved[c] = d + 1;
    }
  };
  return { done: Promise.allSettled(Array.from({ length: count }, (_, c) => run(c))), resolved };
}

/** Per chain, the batches read back: must be a prefix 0..n-1 of its commits. */
function readBack(engine: Engine, count: number, depth: number): number[] {
  const out: number[] = [];
  for (let c = 0; c < count; c++) {
    const present = Array.from({ length: depth }, (_, d) => engine.get(`c/${String(c).padStart(3, "0")}/${d}`) !== undefined);
    const n = present.indexOf(false) === -1 ? depth : present.indexOf(false);
    // A later batch of a chain is never read back without the ones before it.
    expect(
      present.slice(n).every((p) => !p),
      `chain ${c}`,
    ).toBe(true);
    out.push(n);
  }
  return out;
}

describe("WAL cohorts under faults (attack)", () => {
  for (const cohorts of [2, 16]) {
    for (const stored of [false, true]) {
      it(`walCohorts ${cohorts}: every WAL put failing once ${stored ? "after it was stored" : "on its way"} is retried, and every commit lands in order`, async () => {
        const mem = new MemoryStore();
        const { store, failed } = failingFirstWalPut(mem, stored);
        const gated = new GatedStore(store);
        declarePutsContend(gated);
        const engine = await Engine.open(gated, { flushIntervalMs: 10_000, walCohorts: cohorts, retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 2 } });
        // Hold the first wave's object so the next wave gathers behind it and is split into cohorts when it lands.
        gated.hold = (k) => k.startsWith("wal/");
        const count = Math.min(64 * cohorts, 600);
        const { done, resolved } = chains(engine, count, 4);
        await gated.waitHeld(1);
        gated.hold = () => false;
        for (const h of [...gated.held]) gated.release(h.key);
        const results = await done;
        expect(results.filter((r) => r.status === "rejected")).toEqual([]);
        expect(resolved.every((n) => n === 4)).toBe(true);
        // More than one object failed and was retried: the cohorts were on their way together.
        expect(failed.length).toBeGreaterThan(2);
        expect(engine.stats.walPuts).toBeGreaterThan(4);
        await engine.close();
        const reopened = await Engine.open(mem);
        expect(readBack(reopened, count, 4)).toEqual(resolved);
        await reopened.close();
      });
    }
  }

  for (const cohorts of [1, 2, 16]) {
    it(`walCohorts ${cohorts}: a close while cohorts are on their way settles every commit, and each resolved one is read back`, async () => {
      const mem = new MemoryStore();
      const gated = new GatedStore(mem);
      declarePutsContend(gated);
      const engine = await Engine.open(gated, { flushIntervalMs: 10_000, walCohorts: cohorts });
      gated.hold = (k) => k.startsWith("wal/");
      const count = 200;
      const { done, resolved } = chains(engine, count, 3);
      await gated.waitHeld(1);
      // Let the first object land: its wave's next commits split into cohorts, each held on its way.
      const first = gated.held[0]!.key;
      gated.release(first);
      await gated.landed(first);
      await new Promise<void>((r) => setImmediate(r));
      expect(gated.held.length, "cohorts on their way at the close").toBeGreaterThanOrEqual(Math.min(cohorts, 2) - 1);
      const closing = engine.close();
      gated.hold = () => false;
      for (const h of [...gated.held]) gated.release(h.key);
      await closing;
      const results = await done;
      for (const r of results) if (r.status === "rejected") expect(String(r.reason)).toMatch(/clos/i);
      const reopened = await Engine.open(mem);
      const back = readBack(reopened, count, 3);
      // What resolved was stored; what was on its way at the close may be stored too, never more than one batch past it.
      for (let c = 0; c < count; c++) {
        expect(back[c]!, `chain ${c}`).toBeGreaterThanOrEqual(resolved[c]!);
        expect(back[c]!, `chain ${c}`).toBeLessThanOrEqual(resolved[c]! + 1);
      }
      await reopened.close();
    });
  }
});
