/**
 * @module Shards: routing (a stable hash, signals meeting their runs), the
 * layout record fixed at creation, and worker processes (on a MockClock)
 * sharing S shards at most ceil(S / live) each, taking over a dead
 * process's shards, with one owner per shard at any time.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, StoreCorruptedError, UnsupportedFormatError, ValidationError, type ObjectStore } from "taquba";
import { createShards, runShardWorkers, type ShardWorkers } from "../../runtime/cluster/shard-workers.js";
import { readShardLayout, shardOfRun, shardOfSignal, signalRoute, stableHash } from "../../runtime/client/shard-route.js";
import { readOwners } from "../../runtime/cluster/owners-status.js";

const quiet = { error: () => undefined };

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

/** A store whose calls all wait while `paused` (a process stopped or dead, as the store sees it). */
class PausableStore implements ObjectStore {
  paused = false;
  /** Mock time each call takes (a loaded store), when a clock is given. */
  latency: { clock: MockClock; ms: number } | undefined;
  #resume: Array<() => void> = [];
  constructor(readonly inner: ObjectStore) {}
  resume(): void {
    this.paused = false;
    for (const r of this.#resume.splice(0)) r();
  }
  async #gate(): Promise<void> {
    if (this.latency !== undefined) await this.latency.clock.waitUntil(this.latency.clock.now() + this.latency.ms);
    while (this.paused) await new Promise<void>((r) => this.#resume.push(r));
  }
  async get(key: string) {
    await this.#gate();
    return this.inner.get(key);
  }
  async put(key: string, body: Uint8Array, opts?: { ifNoneMatch?: "*" }) {
    await this.#gate();
    return this.inner.put(key, body, opts);
  }
  async delete(key: string) {
    await this.#gate();
    return this.inner.delete(key);
  }
  async *list(prefix: string, opts?: { startAfter?: string }) {
    await this.#gate();
    yield* this.inner.list(prefix, opts);
  }
}

describe("shard routing", () => {
  it("hashes with FNV-1a over UTF-8, the same in every process and version", () => {
    // Fixed values: changing the hash would move existing runs to other shards.
    expect(stableHash("")).toBe(0x811c9dc5);
    expect(stableHash("a")).toBe(0xe40c292c);
    expect(stableHash("order-1")).toBe(stableHash("order-1"));
    expect(stableHash("é")).not.toBe(stableHash("e"));
    expect([0, 1, 2, 3].map((i) => shardOfRun(`order-${i}`, 4))).toEqual([0, 1, 2, 3].map((i) => stableHash(`order-${i}`) % 4));
  });

  it("routes a signal by the text after the last ':', so `purpose:<runId>` meets its run", () => {
    expect(signalRoute("payment:order-1")).toBe("order-1");
    expect(signalRoute("a:b:order-1")).toBe("order-1");
    expect(signalRoute("plain")).toBe("plain");
    for (let i = 0; i < 200; i++) {
      expect(shardOfSignal(`payment:run-${i}`, 7)).toBe(shardOfRun(`run-${i}`, 7));
    }
  });

  it("spreads run ids evenly", () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4_000; i++) counts[shardOfRun(`r${i}`, 4)]!++;
    for (const c of counts) expect(c).toBeGreaterThan(850);
  });
});

describe("createShards", () => {
  it("records the count once; the same count again is harmless, another is refused", async () => {
    const store = new MemoryStore();
    expect(await readShardLayout(store, "app")).toBeUndefined();
    expect(await createShards(store, "app", 4)).toEqual({ shards: 4 });
    expect(await createShards(store, "app", 4)).toEqual({ shards: 4 });
    await expect(createShards(store, "app", 8)).rejects.toThrow(/created with 4 shards/);
    expect(await readShardLayout(store, "app")).toEqual({ shards: 4 });
  });

  it("refuses absurd counts and a store that already holds an unsharded queue, writing nothing", async () => {
    const store = new MemoryStore();
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e30, 257]) {
      await expect(createShards(store, "app", bad), String(bad)).rejects.toBeInstanceOf(ValidationError);
    }
    const q = await Queue.open(store, "old");
    await q.close();
    await expect(createShards(store, "old", 2)).rejects.toThrow(/already holds an unsharded queue/);
    const keys: string[] = [];
    for await (const o of store.list("")) keys.push(o.key);
    expect(keys.filter((k) => k.includes("cluster/"))).toEqual([]);
  });

  it("a damaged layout record is a StoreCorruptedError naming the object and the mend, not a guess", async () => {
    const store = new MemoryStore();
    const damaged = [
      "{nope",
      "null",
      "[4]",
      "{}",
      '{"v":1}',
      '{"v":1,"shards":0}',
      '{"v":1,"shards":2.5}',
      '{"v":1,"shards":1e30}',
      '{"v":"1","shards":2}',
      "\xff",
    ];
    for (const text of damaged) {
      await store.put("app/cluster/shards", new TextEncoder().encode(text));
      const err = await readShardLayout(store, "app").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, text).toBeInstanceOf(StoreCorruptedError);
      expect((err as StoreCorruptedError).code).toBe("STORE_CORRUPTED");
      expect((err as StoreCorruptedError).objectKey).toBe("app/cluster/shards");
      expect((err as Error).message).toMatch(/shard layout of sharded store "app".*rewrite it as \{"v":1,"shards":N\}/);
      // Every entry point that reads the layout says the same.
      await expect(runShardWorkers(store, "app", { start: async () => ({ stop: async () => undefined }) })).rejects.toBeInstanceOf(StoreCorruptedError);
      await expect(Queue.open(store, "app/shards/0")).rejects.toBeInstanceOf(StoreCorruptedError);
    }
    // A newer format is not damage: upgrade.
    await store.put("app/cluster/shards", new TextEncoder().encode('{"v":2,"shards":4}'));
    await expect(readShardLayout(store, "app")).rejects.toBeInstanceOf(UnsupportedFormatError);
  });

  it("runShardWorkers refuses a store that is not sharded", async () => {
    await expect(runShardWorkers(new MemoryStore(), "app", { start: async () => ({ stop: async () => undefined }) })).rejects.toThrow(/not sharded/);
  });
});

describe("shard workers", () => {
  const LEASE = 3_000;
  const RENEW = 500;

  /** `processes` workers over `shards` shards, each started `staggerMs` after the one before. */
  async function cluster(processes: number, shards: number, staggerMs = 0, latencyMs = 0) {
    const inner = new MemoryStore();
    await createShards(inner, "app", shards);
    const clock = new MockClock();
    const running = new Map<number, number>(); // shard -> how many processes run its work
    let overlap = 0;
    const stores = Array.from({ length: processes }, () => new PausableStore(inner));
    const workers: ShardWorkers[] = [];
    for (const [i, store] of stores.entries()) {
      workers.push(
        await runShardWorkers(store, "app", {
          processId: `p${i}`,
          clock,
          leaseDurationMs: LEASE,
          renewIntervalMs: RENEW,
          logger: quiet,
          start: async ({ shard }) => {
            running.set(shard, (running.get(shard) ?? 0) + 1);
            if (running.get(shard)! > 1) overlap++;
            return { stop: async () => void running.set(shard, running.get(shard)! - 1) };
          },
        }),
      );
      // From here on this worker's store calls take `latencyMs` of mock time.
      if (latencyMs > 0) store.latency = { clock, ms: latencyMs };
      for (let t = 0; t < staggerMs; t += 10) {
        clock.advance(Math.min(10, staggerMs - t));
        await settle();
      }
    }
    const step = async (ms: number) => {
      for (let t = 0; t < ms; t += 50) {
        clock.advance(50);
        await settle();
      }
    };
    return { inner, clock, stores, workers, running, step, overlap: () => overlap };
  }

  it("three processes over four shards: each owns at most two, every shard is owned, one owner each", async () => {
    const c = await cluster(3, 4);
    await c.step(LEASE * 6);
    const owned = c.workers.map((w) => w.owned());
    expect(owned.flat().sort()).toEqual([0, 1, 2, 3]);
    for (const o of owned) expect(o.length).toBeLessThanOrEqual(2);
    expect(c.overlap()).toBe(0);
    await Promise.all(c.workers.map((w) => w.stop()));
    expect([...c.running.values()].every((n) => n === 0)).toBe(true);
  });

  it("a dead process's shards are taken over by the survivors, and the status API names them", async () => {
    const c = await cluster(3, 4);
    await c.step(LEASE * 6);
    const victim = c.workers.findIndex((w) => w.owned().length > 0);
    const lost = c.workers[victim]!.owned();
    c.stores[victim]!.paused = true;
    await c.step(LEASE * 3);
    const survivors = c.workers.filter((_, i) => i !== victim);
    expect(survivors.flatMap((w) => w.owned()).sort()).toEqual([0, 1, 2, 3]);
    for (const w of survivors) expect(w.owned().length).toBeLessThanOrEqual(2);
    expect(lost.length).toBeGreaterThan(0);
    expect(c.overlap()).toBe(0);
    // The status API names an owner for every shard.
    const status = await readOwners(c.inner, "app", { now: () => c.clock.now() });
    expect(status.map((s) => s.shard)).toEqual([0, 1, 2, 3]);
    for (const s of status) expect(survivors.map((w) => w.processId)).toContain(s.owner);
    c.stores[victim]!.resume();
    await Promise.all(c.workers.map((w) => w.stop()));
  });

  it("survivors already at their share take a dead process's shards within the lease duration plus one renewal interval", async () => {
    // Store calls take `latency` ms: the claim's own round trips come on top of the bound.
    for (const [processes, stagger, phase, latency] of [
      [2, 0, 0, 0],
      [2, 170, 275, 0],
      [2, 330, 60, 40],
      [4, 90, 130, 0],
      [4, 120, 490, 40],
      [2, 74, 226, 140],
      [4, 7, 243, 100],
    ] as const) {
      const c = await cluster(processes, 4, stagger, latency);
      await c.step(LEASE * 8 + phase);
      // Each process at its share of ceil(4 / processes).
      for (const w of c.workers) expect(w.owned(), `${processes} processes`).toHaveLength(4 / processes);
      const victim = 0;
      const lost = c.workers[victim]!.owned();
      c.stores[victim]!.paused = true;
      const from = c.clock.now();
      const survivors = c.workers.filter((_, i) => i !== victim);
      const claimed = new Map<number, number>();
      while (claimed.size < lost.length && c.clock.now() - from < LEASE * 4) {
        c.clock.advance(10);
        await settle();
        for (const s of lost) if (!claimed.has(s) && survivors.some((w) => w.owned().includes(s))) claimed.set(s, c.clock.now() - from);
      }
      for (const s of lost)
        expect(claimed.get(s), `shard ${s} of ${processes} processes, stagger ${stagger}, phase ${phase}, latency ${latency}`).toBeLessThanOrEqual(
          LEASE + RENEW + 4 * latency,
        );
      expect(c.overlap()).toBe(0);
      c.stores[victim]!.resume();
      let stopped = false;
      const stopping = Promise.all(c.workers.map((w) => w.stop())).then(() => (stopped = true));
      while (!stopped) await c.step(50); // store calls in flight wait on the mock clock
      await stopping;
    }
  });

  it("one process owns all shards alone and hands half to a second that joins", async () => {
    const inner = new MemoryStore();
    await createShards(inner, "app", 4);
    const clock = new MockClock();
    const start = async () => ({ stop: async () => undefined });
    const opts = { clock, leaseDurationMs: LEASE, renewIntervalMs: RENEW, logger: quiet, start };
    const a = await runShardWorkers(inner, "app", { ...opts, processId: "a" });
    for (let t = 0; t < LEASE * 2; t += 50) {
      clock.advance(50);
      await settle();
    }
    expect(a.owned()).toEqual([0, 1, 2, 3]);
    const b = await runShardWorkers(inner, "app", { ...opts, processId: "b" });
    for (let t = 0; t < LEASE * 8; t += 50) {
      clock.advance(50);
      await settle();
    }
    expect(a.owned()).toHaveLength(2);
    expect(b.owned()).toHaveLength(2);
    await Promise.all([a.stop(), b.stop()]);
    const status = await readOwners(inner, "app");
    expect(status.map((s) => s.owner)).toEqual([null, null, null, null]);
  });
});
