/**
 * @module Values kept in the writer's arena (64 B to 1 KiB, not paged)
 * against a model, through random puts of every size around the arena's
 * and the packing's bounds, overwrites with the same and other bytes,
 * deletes, callers that change the arrays they committed and the arrays
 * they read, freezes, incremental checkpoints, compactions and reopens
 * (with and without a close). Each read gives the model's bytes, and a
 * value token equal to one taken earlier means the key holds the bytes it
 * held then (`Engine.valueToken`, `committedToken`).
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { commitOwned } from "../../runtime/engine/engine.js";
import { ARENA_KEPT_BYTES, MAX_PACKED_BYTES } from "../../runtime/engine/paged-value.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const pageValues = { keyPrefixes: ["j/"], minBytes: 64 };
const SIZES = [
  0,
  1,
  ARENA_KEPT_BYTES - 1,
  ARENA_KEPT_BYTES,
  ARENA_KEPT_BYTES + 1,
  110,
  511,
  MAX_PACKED_BYTES - 1,
  MAX_PACKED_BYTES,
  MAX_PACKED_BYTES + 1,
  5000,
];
// Kept keys of shared prefixes (a step's history entries), a few pageable ones, and keys whose value may repeat their tail.
const KEYS = [
  ...Array.from({ length: 40 }, (_, i) => `u/h/run-${i % 4}/${String(i).padStart(4, "0")}`),
  ...Array.from({ length: 8 }, (_, i) => `j/${i}`),
  `t/${"z".repeat(ARENA_KEPT_BYTES + 8)}`,
];

function drawValue(r: TestRandom, key: string): Uint8Array {
  // Now and then the key's own tail, which the writer holds as a count of characters, not bytes.
  if (key.startsWith("t/") && r.int(2) === 0) return new TextEncoder().encode(key.slice(-(ARENA_KEPT_BYTES + r.int(8))));
  const v = new Uint8Array(SIZES[r.int(SIZES.length)]!);
  const seed = r.int(256);
  for (let i = 0; i < v.length; i++) v[i] = (seed + i * 13) & 0xff;
  return v;
}

const open = (store: MemoryStore) => Engine.open(store, { pageValues, checkpointWalObjects: 0, memtableKeys: 1024, maxSegmentRuns: 3 });

describe("values kept in the arena, against a model", () => {
  it("read as the model says and keep their tokens only while the key holds the same bytes", async () => {
    const r = testRandom("kept-arena-model");
    const store = new MemoryStore();
    let engine = await open(store);
    const model = new Map<string, Uint8Array>();
    const tokens = new Map<string, { token: unknown; bytes: Uint8Array }>();
    let compactions = 0;
    const check = async () => {
      for (let p = engine.warm(KEYS); p; p = engine.warm(KEYS)) await p;
      for (const k of KEYS) {
        const want = model.get(k);
        const got = engine.get(k);
        if (want === undefined) expect(got, k).toBeUndefined();
        else expect(got && Buffer.compare(got, want), k).toBe(0);
        // A caller that changes what it read of a value held packed or kept changes nothing held (the others are the engine's own).
        if (got !== undefined && got.length > 0 && got.length <= MAX_PACKED_BYTES && !k.startsWith("j/")) got.fill(0xa5);
        const token = engine.valueToken(k);
        const was = tokens.get(k);
        if (token !== undefined && was !== undefined && token === was.token) expect(want && Buffer.compare(want, was.bytes), `token of ${k}`).toBe(0);
        if (token !== undefined && want !== undefined) tokens.set(k, { token, bytes: want.slice() });
      }
    };
    try {
      for (let round = 0; round < 120; round++) {
        const b = new WriteBatch();
        const given: Uint8Array[] = [];
        const put = new Map<string, Uint8Array>();
        for (let n = 1 + r.int(12); n > 0; n--) {
          const k = KEYS[r.int(KEYS.length)]!;
          if (r.int(5) === 0) {
            b.delete(k);
            put.delete(k);
            model.delete(k);
            continue;
          }
          // Now and then the bytes the key holds already, in a new array.
          const v = r.int(6) === 0 && model.has(k) ? model.get(k)!.slice() : drawValue(r, k);
          b.put(k, v);
          given.push(v);
          put.set(k, v);
          model.set(k, v.slice());
        }
        const owned = r.int(3) === 0;
        if (owned) await commitOwned(engine, b.ops, []);
        else await engine.commit(b);
        // The token a commit's value gives is the key's while it holds those bytes.
        for (const [k, v] of put) {
          const t = engine.committedToken(k, v);
          if (t !== undefined) expect(t, `committed token of ${k}`).toBe(engine.valueToken(k));
          // Bytes the key does not hold, of the same length, never give its token.
          if (v.length === 0) continue;
          const other = v.slice();
          other[r.int(other.length)]! ^= 1 << r.int(8);
          expect(engine.committedToken(k, other) === engine.valueToken(k) && engine.valueToken(k) !== undefined, `other bytes' token of ${k}`).toBe(false);
        }
        // The caller of commit changes its arrays afterwards (the engine holds copies); commitOwned's caller keeps them as they are.
        if (!owned) for (const v of given) v.fill(0x5a);
        await check();
        const step = r.int(10);
        if (step === 0) await engine.checkpoint();
        if (step === 1 || step === 2) compactions += engine.stats.compactions;
        if (step === 1) {
          // Reopened without a close: the next writer replays the WAL past the last checkpoint.
          const next = await open(store);
          await engine.close().catch(() => {});
          engine = next;
          tokens.clear();
        } else if (step === 2) {
          await engine.close();
          engine = await open(store);
          tokens.clear();
        }
        await check();
      }
      // The rounds went through whole rewrites of the state too, not only incremental checkpoints.
      expect(compactions + engine.stats.compactions).toBeGreaterThan(0);
    } finally {
      await engine.close().catch(() => {});
    }
  });
});
