/**
 * @module The engine's reopen reads whole segments borrowed
 * (`ObjectStore.getBorrowed`: `MemoryStore` answers the bytes it keeps, no
 * copy) and never writes into one: a store that checksums every body it
 * lends and checks them all after reopens (a writer's, with and without
 * paged values, and a reader's) would see any write. No value read back is
 * a view of lent bytes: a user writing over what a reader answered changes
 * nothing stored, and the next reopen reads every value as committed.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, type ObjectStore, type StoredObject } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { passPutBodyReleased } from "../../runtime/store/put-body.js";
import { testRandom } from "../support/seed.js";

interface Lent {
  key: string;
  body: Uint8Array;
  crc: number;
}

/** `inner` with a borrowed read that checksums each body it lends; declared as `inner` is. */
function lending(inner: MemoryStore): { store: ObjectStore; lent: Lent[] } {
  const lent: Lent[] = [];
  const store: ObjectStore = {
    get: (k) => inner.get(k),
    async getBorrowed(key: string): Promise<StoredObject | null> {
      const found = await inner.getBorrowed(key);
      if (found !== null) lent.push({ key, body: found.body, crc: crc32(found.body) });
      return found;
    },
    getRange: (k, o, l) => inner.getRange(k, o, l),
    put: (k, b, o) => inner.put(k, b, o),
    delete: (k) => inner.delete(k),
    list: (p, o) => inner.list(p, o),
  };
  passPutBodyReleased(inner, store);
  return { store, lent };
}

const opts = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentBytes: 16 * 1024,
  segmentBlockBytes: 4 * 1024,
  maxSegmentRuns: 3,
  onBackgroundError: () => {},
};

describe("segments read borrowed at reopen", () => {
  it("are never written into, and no value read back is a view of them", async () => {
    const rnd = testRandom("borrowed reads");
    const inner = new MemoryStore();
    const { store, lent } = lending(inner);
    const model = new Map<string, string>();
    for (let life = 0; life < 3; life++) {
      const engine = await Engine.open(store, opts);
      // What the reopen read back is what was committed.
      for (const [k, v] of model) {
        const got = engine.get(k);
        expect(got && Buffer.from(got).toString(), k).toBe(v);
      }
      for (let round = 0; round < 4; round++) {
        const b = new WriteBatch();
        for (let i = 0; i < 300; i++) {
          const key = `k/${String(rnd.int(2000)).padStart(5, "0")}`;
          if (rnd.int(6) === 0) {
            b.delete(key);
            model.delete(key);
          } else {
            // Short values, values past the run's staging size, and values past its inline size (kept as arrays of their own).
            const v = `${key} life ${life} round ${round} `.repeat(rnd.int(8) === 0 ? 40 + rnd.int(40) : 1 + rnd.int(8));
            b.put(key, new TextEncoder().encode(v));
            model.set(key, v);
          }
        }
        await engine.commit(b);
        await engine.checkpoint();
      }
      await engine.close();
    }
    // Paged values (a writer's open reads key sections, and segments whole where a section leaves values out) and a reader's open.
    const paged = await Engine.open(store, { ...opts, pageValues: { keyPrefixes: ["k/"], minBytes: 64 } });
    for (const [k, v] of model) {
      await paged.warm([k]);
      expect(Buffer.from(paged.get(k)!).toString(), k).toBe(v);
    }
    await paged.close();
    // A reader writes nothing back: a user writing over the values it answers (which its contract forbids)
    // reaches its own state at most, never the bytes the store lent.
    const reader = await EngineReader.open(store);
    let read = 0;
    for (const [k, v] of reader.scan()) {
      expect(Buffer.from(v).toString(), k).toBe(model.get(k));
      v.fill(0x2c);
      read++;
    }
    expect(read).toBe(model.size);
    const segmentsLent = lent.filter((l) => l.key.startsWith("seg/"));
    expect(segmentsLent.length, "segments read borrowed").toBeGreaterThan(10);
    for (const l of lent) expect(crc32(l.body), `${l.key} was written into after it was lent`).toBe(l.crc);
    // And the store holds what was committed: a reopen of the plain store reads every value back.
    const again = await EngineReader.open(inner);
    const got = new Map<string, string>();
    for (const [k, v] of again.scan()) got.set(k, Buffer.from(v).toString());
    expect(got).toEqual(model);
  });
});
