/**
 * @module Attack on the group commit's hold bound through a store whose WAL
 * puts are slow, then fast, then failing, with commits in flight across
 * every change: every commit settles (none waits for ever on a hold), each
 * acknowledged one is in a reopen, those refused fail with a typed error
 * naming the store's failure, and the writer's first fatal error is the
 * one every later commit gets.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreUnavailableError, TaqubaError, WriteBatch, type PutOptions } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { everyPutSlow } from "../support/every-put-slow.js";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);

type Phase = "slow" | "fast" | "failing";

/** A store whose WAL puts take `slowMs` while slow, go at once while fast, and fail (unavailable) while failing. */
class PhasedStore extends ForwardingStore {
  phase: Phase = "slow";
  constructor(
    inner: MemoryStore,
    readonly slowMs: () => number,
  ) {
    super(inner);
  }
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (key.startsWith("wal/")) {
      if (this.phase === "failing") throw new StoreUnavailableError("put", key, "the test store is failing");
      if (this.phase === "slow") await new Promise((r) => setTimeout(r, this.slowMs()));
    }
    return super.put(key, body, opts);
  }
}

describe("the group commit's hold over puts slow, then fast, then failing", () => {
  everyPutSlow();

  for (let n = 1; n <= 3; n++) {
    it(`settles every commit, keeps every acknowledged one and refuses the rest typed (seeded, ${n})`, async () => {
      const rnd = testRandom(`wal-hold-phases-${n}`);
      const inner = new MemoryStore();
      const store = new PhasedStore(inner, () => 5 + rnd.int(40));
      const engine = await Engine.open(store, { flushIntervalMs: 2, retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 }, onBackgroundError: () => {} });
      const commits: { key: string; done: Promise<unknown> }[] = [];
      const wave = async (count: number) => {
        for (let i = 0; i < count; i++) {
          const key = `k/${String(commits.length).padStart(5, "0")}`;
          commits.push({
            key,
            done: engine.commit(new WriteBatch().put(key, enc(store.phase))).then(
              () => "ok",
              (e: unknown) => e,
            ),
          });
          if (rnd.int(8) === 0) await new Promise((r) => setTimeout(r, rnd.int(10)));
        }
      };
      await wave(150);
      store.phase = "fast";
      await wave(150);
      store.phase = "slow";
      await wave(100);
      store.phase = "failing";
      await wave(50);
      const results = await Promise.all(commits.map((c) => c.done));
      const acknowledged = commits.filter((_, i) => results[i] === "ok").map((c) => c.key);
      const refused = results.filter((r) => r !== "ok");
      expect(acknowledged.length).toBeGreaterThan(0);
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) expect(r, String(r)).toBeInstanceOf(TaqubaError);
      // The writer's first fatal error, the store's, is what every refused commit gets.
      expect(new Set(refused.map((r) => (r as Error).message)).size).toBe(1);
      expect((refused[0] as Error).message).toMatch(/the test store is failing/);
      // Refusals come only after the store failed: every commit sent while it was slow or fast and settled before is kept.
      await engine.close().catch(() => undefined);
      store.phase = "fast";
      const reopened = await Engine.open(inner);
      for (const key of acknowledged) expect(reopened.get(key), key).toBeDefined();
      await reopened.close();
    }, 60_000);
  }
});
