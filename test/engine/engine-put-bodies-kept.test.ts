/**
 * @module The engine never writes into a body it has put to a store that
 * keeps what it is given (any store not declared done with a put's body;
 * `MemoryStore` keeps a lent body as the object's bytes): not a WAL object,
 * a segment of an incremental checkpoint, a fold or a compaction, nor a
 * manifest; and it hands each segment over in a buffer the store may keep
 * (a whole segment as it was built, a small one as a copy). A store that
 * checksums each body at its put and checks every one at the end, declared
 * as `MemoryStore` is, would see any write into one.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { keepsAsItIs, putBodyReleased } from "../../runtime/store/put-body.js";
import { checksumming } from "../support/checksumming-store.js";
import { testRandom } from "../support/seed.js";

const opts = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentBytes: 16 * 1024,
  segmentBlockBytes: 4 * 1024,
  maxWalBytes: 2048,
  maxSegmentRuns: 3,
  onBackgroundError: () => {},
};

describe("bodies the engine put to a store that keeps them", () => {
  it("are never written into: WAL objects, segments of checkpoints, folds and compactions, manifests, over reopens", async () => {
    const rnd = testRandom("bodies kept");
    const inner = new MemoryStore();
    const { store, puts } = checksumming(inner);
    expect(putBodyReleased(store)).toBe(false);
    const model = new Map<string, Uint8Array>();
    let compactions = 0;
    let checkpoints = 0;
    let folds = 0;
    for (let life = 0; life < 4; life++) {
      // The second life folds runs by tier instead of compacting; the last writes segments that fill their builder's
      // buffer, handed over as they are (the others are small, copied for their put).
      const big = life === 3;
      const engine = await Engine.open(store, {
        ...opts,
        foldRunsByTier: life === 1,
        ...(big ? { maxSegmentBytes: 1024 * 1024, segmentBlockBytes: 64 * 1024 } : {}),
      });
      for (let round = 0; round < 8; round++) {
        const commits: Promise<void>[] = [];
        for (let i = 0; i < 60; i++) {
          const b = new WriteBatch();
          for (let j = 0; j < 4; j++) {
            const key = `k/${String(rnd.int(900)).padStart(5, "0")}`;
            if (rnd.int(5) === 0) {
              b.delete(key);
              model.delete(key);
            } else {
              const v = new TextEncoder().encode(`${key} life ${life} round ${round} `.repeat(1 + rnd.int(big ? 400 : 12)));
              b.put(key, v);
              model.set(key, v);
            }
          }
          commits.push(engine.commit(b));
        }
        await Promise.all(commits);
        await engine.checkpoint();
      }
      compactions += engine.stats.compactions;
      checkpoints += engine.stats.checkpoints;
      folds += engine.stats.runsFoldedByTier;
      await engine.close();
    }
    expect(compactions).toBeGreaterThan(2);
    expect(checkpoints - compactions).toBeGreaterThan(6);
    expect(folds).toBeGreaterThan(0);
    for (const kind of ["wal/", "seg/", "manifest/"]) expect(puts.filter((p) => p.key.startsWith(kind)).length, kind).toBeGreaterThan(5);
    const segments = puts.filter((p) => p.key.startsWith("seg/"));
    expect(segments.filter((p) => keepsAsItIs(p.body)).length, "segments handed over as they are").toBeGreaterThan(2);
    // Any other lies in Node's shared slab (a copy of a segment under 4 KiB), which the store copies again.
    for (const p of segments) if (!keepsAsItIs(p.body)) expect(p.body.byteLength, p.key).toBeLessThan(4096);
    for (const p of puts) expect(crc32(p.body), `${p.key} was written into after its put`).toBe(p.crc);
    const reader = await EngineReader.open(inner);
    const got = new Map<string, Uint8Array>();
    for (const [k, v] of reader.scan()) got.set(k, Uint8Array.from(v));
    expect([...got.keys()].sort()).toEqual([...model.keys()].sort());
    for (const [k, v] of model) expect(Buffer.compare(got.get(k)!, v), k).toBe(0);
  });
});
