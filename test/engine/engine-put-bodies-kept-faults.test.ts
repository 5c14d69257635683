/**
 * @module Bodies put to a store that keeps them, when the put fails after
 * the store kept the body (a timed-out request whose write landed): the
 * engine retries with the same body, never writes into one it handed over,
 * and a reader opened after each life reads what was acknowledged.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, withFaults } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { putBodyReleased } from "../../runtime/store/put-body.js";
import { checksumming } from "../support/checksumming-store.js";
import { testRandom } from "../support/seed.js";

describe("bodies kept by a store whose puts fail after keeping them", () => {
  it("are retried as they were, never written into, and every reopen reads what was acknowledged", { timeout: 180_000 }, async () => {
    const rnd = testRandom("bodies kept, puts failing");
    const inner = new MemoryStore();
    const { store: kept, puts } = checksumming(inner);
    const store = withFaults(kept, { failureRate: 0.2, ops: ["put"], failAfterWriteRate: 1, seed: rnd.int(2 ** 31) });
    expect(putBodyReleased(store)).toBe(false);
    const model = new Map<string, Uint8Array>();
    for (let life = 0; life < 4; life++) {
      const engine = await Engine.open(store, {
        checkpointWalObjects: 0,
        checkpointWalBytes: 0,
        maxSegmentBytes: life === 2 ? 1024 * 1024 : 16 * 1024,
        segmentBlockBytes: life === 2 ? 64 * 1024 : 4 * 1024,
        maxWalBytes: 2048,
        maxSegmentRuns: 3,
        onBackgroundError: () => {},
      });
      for (let round = 0; round < 6; round++) {
        const commits: Promise<void>[] = [];
        for (let i = 0; i < 40; i++) {
          const b = new WriteBatch();
          for (let j = 0; j < 4; j++) {
            const key = `k/${String(rnd.int(700)).padStart(5, "0")}`;
            if (rnd.int(5) === 0) {
              b.delete(key);
              model.delete(key);
            } else {
              const v = new TextEncoder().encode(`${key} life ${life} round ${round} `.repeat(1 + rnd.int(life === 2 ? 300 : 10)));
              b.put(key, v);
              model.set(key, v);
            }
          }
          commits.push(engine.commit(b));
        }
        await Promise.all(commits);
        if (round % 2 === 1) await engine.checkpoint();
      }
      await engine.close();
      await expectModel(inner, model);
    }
    expect(store.injected).toBeGreaterThan(10);
    for (const kind of ["wal/", "seg/", "manifest/"]) expect(puts.filter((p) => p.key.startsWith(kind)).length, kind).toBeGreaterThan(5);
    for (const p of puts) expect(crc32(p.body), `${p.key} was written into after its put`).toBe(p.crc);
    // Bodies retried after a failure were the same bytes: a WAL object's, segment's or manifest's every put carried one checksum.
    const byKey = new Map<string, number>();
    for (const p of puts) {
      if (!/^(wal|seg|manifest)\//.test(p.key)) continue;
      const was = byKey.get(p.key);
      if (was !== undefined) expect(p.crc, `${p.key} retried with other bytes`).toBe(was);
      byKey.set(p.key, p.crc);
    }
  });
});

/** What a reader of `store` opened now holds is `model`. */
async function expectModel(store: MemoryStore, model: Map<string, Uint8Array>): Promise<void> {
  const reader = await EngineReader.open(store);
  const got = new Map<string, Uint8Array>();
  for (const [k, v] of reader.scan()) got.set(k, Uint8Array.from(v));
  expect([...got.keys()].sort()).toEqual([...model.keys()].sort());
  for (const [k, v] of model) expect(Buffer.compare(got.get(k)!, v), k).toBe(0);
}
