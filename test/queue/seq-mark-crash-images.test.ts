/**
 * @module The seq high-water mark counted once applied (seq-high-water.ts),
 * attacked at every crash image: enqueues from several callers over many
 * marks, their WAL puts landing out of order (random delays, several in
 * flight) and some failing once and retried after later ones landed, with
 * checkpoints between. Each prefix of the store's writes, in the order
 * they landed, is a state a crash could leave; a second process opens each
 * with its clock gone back and must hold every acknowledged job, claim
 * them in id order, and hand out a new id after every id it recovered and
 * every id acknowledged before the crash.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, StoreUnavailableError } from "taquba";
import { LandedWritesStore, storeAfter } from "../support/landed-writes.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { dec, enc } from "./helpers.js";

/** Records every write that landed, in landing order; WAL puts are delayed at random and some fail once before landing. */
class LandingOrderStore extends LandedWritesStore {
  readonly #r: TestRandom;
  readonly #failedOnce = new Set<string>();

  constructor(inner: MemoryStore, r: TestRandom) {
    super(inner);
    this.#r = r;
  }

  protected override async beforePut(key: string): Promise<void> {
    if (!key.includes("wal/")) return;
    await new Promise((res) => setTimeout(res, this.#r.int(4)));
    if (!this.#failedOnce.has(key) && this.#r.int(4) === 0) {
      this.#failedOnce.add(key);
      throw new StoreUnavailableError("put", key, new Error("injected: the connection was reset"));
    }
  }
}

describe("the seq mark at every crash image", () => {
  it("keeps every acknowledged job, FIFO by id, and new ids after every earlier one, with WAL puts landing out of order and retried", async () => {
    const r = testRandom("seq mark crash images");
    const store = new LandingOrderStore(new MemoryStore(), r);
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "q", {
      clock,
      flushIntervalMs: 1,
      engineOptions: { maxInflightWalPuts: 4, checkpointWalObjects: 12, retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 2 } },
    });
    // Per acknowledged job: its id, payload, and how many writes had landed when it was acknowledged.
    const acked: { id: string; payload: string; at: number }[] = [];
    const caller = async (c: number) => {
      for (let i = 0; i < 25; i++) {
        // Over about six marks' spans, several callers sharing each millisecond.
        if (r.int(3) === 0) clock.advance(r.int(250));
        const payload = `c${c}-${i}`;
        const { jobId } = await queue.enqueue("q", enc(payload));
        acked.push({ id: jobId, payload, at: store.writes.length });
      }
    };
    await Promise.all([0, 1, 2, 3].map(caller));
    const lastTime = clock.now();
    await queue.close();
    expect(store.writes.some((w) => w.key.includes("manifest/"))).toBe(true);

    for (let n = 0; n <= store.writes.length; n++) {
      const image = await storeAfter(store.writes.slice(0, n));
      const durable = acked.filter((a) => a.at <= n);
      // The clock gone back further than a mark reaches ahead: only the stored mark orders new ids.
      const again = await Queue.open(image, "q", { clock: new MockClock(lastTime - 5000), flushIntervalMs: 0 });
      const { jobId: fresh } = await again.enqueue("q", enc("fresh"));
      const got: { id: string; payload: string }[] = [];
      for (let j = await again.claim("q"); j !== null; j = await again.claim("q")) {
        got.push({ id: j.id, payload: dec(j.payload) });
        await again.ack(j);
      }
      const where = `crash image after ${n} of ${store.writes.length} writes`;
      expect(got.at(-1), where).toEqual({ id: fresh, payload: "fresh" });
      const ids = got.map((g) => g.id);
      expect(ids, `${where}: claimed in id order`).toEqual([...ids].sort());
      const held = new Set(got.map((g) => g.payload));
      for (const d of durable) expect(held.has(d.payload), `${where}: acknowledged job ${d.id} lost`).toBe(true);
      for (const d of durable) expect(fresh > d.id, `${where}: new id ${fresh} not after acknowledged ${d.id}`).toBe(true);
      await again.close();
    }
  }, 120_000);
});
