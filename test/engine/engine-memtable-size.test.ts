/**
 * @module The memtable's size chosen by the engine (no `memtableKeys`), on a
 * real directory: a working set rewritten over and over grows it, keys
 * written once shrink it back, and across those changes and reopens (from
 * the WAL and from checkpoints) every read matches a plain map of what was
 * committed. The range is lowered for the test so that small phases cross it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, LocalStore, WriteBatch } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";

beforeAll(() => {
  stateTuning.memtableRange = { minKeys: 64, maxKeys: 1024 };
  stateTuning.idleSlice = 16;
});
afterAll(() => {
  stateTuning.memtableRange = undefined;
  stateTuning.idleSlice = undefined;
});

const tempDir = useTempDirs("taquba-memtable-size-");
const enc = new TextEncoder();
const dec = new TextDecoder();

function key(i: number): string {
  return `k/${String(i).padStart(7, "0")}`;
}

describe("the memtable's size chosen by the engine", () => {
  // About 2,300 fsynced commits: mostly waits on the disk, which a loaded machine stretches many times.
  it("grows and shrinks with the workload, and reads match a model across reopens", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      const r = testRandom("engine memtable size");
      const store = new LocalStore(await tempDir());
      const model = new Map<string, string>();
      const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0 };
      let engine = await Engine.open(store, opts);
      let grows = 0;
      let shrinks = 0;
      let fresh = 1_000_000;

      const commit = async (ops: { k: string; v: string | undefined }[]) => {
        const b = new WriteBatch();
        for (const { k, v } of ops) {
          if (v === undefined) b.delete(k);
          else b.put(k, enc.encode(v));
        }
        await engine.commit(b);
        for (const { k, v } of ops) {
          if (v === undefined) model.delete(k);
          else model.set(k, v);
        }
      };
      const expectModel = () => {
        const scanned = [...engine.scan({ prefix: "k/" })].map(([k, v]) => `${k}=${dec.decode(v)}`);
        const expected = [...model.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`);
        expect(scanned).toEqual(expected);
        for (let i = 0; i < 50; i++) {
          const k = r.int(2) === 0 ? key(r.int(400)) : key(1_000_000 + r.int(fresh - 1_000_000 + 1));
          const v = engine.get(k);
          expect(v === undefined ? undefined : dec.decode(v)).toBe(model.get(k));
        }
      };
      const reopen = async (how: number) => {
        grows += engine.stats.memtableGrows;
        shrinks += engine.stats.memtableShrinks;
        if (how === 1) await engine.checkpoint();
        await engine.close();
        engine = await Engine.open(store, opts);
        // Nothing stored depends on the size: a replay of rewrites may grow it again.
        expect(engine.stats.memtableKeys).toBeGreaterThanOrEqual(64);
        expect(engine.stats.memtableKeys).toBeLessThanOrEqual(1024);
        expectModel();
      };

      for (let phase = 0; phase < 6; phase++) {
        // A working set of 400 keys rewritten in order (with some deletes), then 4,000 keys written once.
        for (let round = 0; round < 15; round++) {
          for (let at = 0; at < 400; at += 20) {
            const ops = [];
            for (let i = at; i < at + 20; i++) ops.push({ k: key(i), v: r.int(10) === 0 ? undefined : `w${phase}.${round}.${i}` });
            await commit(ops);
          }
        }
        const grown = engine.stats.memtableKeys;
        expect(grown).toBeGreaterThan(400);
        expectModel();
        if (phase % 2 === 1) await reopen(phase % 4 === 1 ? 1 : 0);
        for (let at = 0; at < 4_000; at += 50) {
          const ops = [];
          for (let i = 0; i < 50; i++) ops.push({ k: key(fresh++), v: `o${phase}.${i}` });
          await commit(ops);
        }
        expect(engine.stats.memtableKeys).toBe(64);
        expectModel();
        await reopen(phase % 3 === 0 ? 1 : 0);
      }
      grows += engine.stats.memtableGrows;
      shrinks += engine.stats.memtableShrinks;
      expect(grows).toBeGreaterThanOrEqual(6);
      expect(shrinks).toBeGreaterThanOrEqual(6);
      await engine.close();
    }),
  );

  it("counts in its stats the young runs a grow takes back and the entries it moves, none for keys written once", async () => {
    const engine = await Engine.open(new LocalStore(await tempDir()), { checkpointWalObjects: 0, checkpointWalBytes: 0 });
    const put = async (keys: number[], round: number) => {
      const b = new WriteBatch();
      for (const i of keys) b.put(key(i), enc.encode(`${round}`));
      await engine.commit(b);
    };
    // 2,000 keys written once: freezes, and nothing to take back.
    const fresh = (at: number) => Array.from({ length: 50 }, (_, i) => 1_000_000 + at + i);
    for (let at = 0; at < 2_000; at += 50) await put(fresh(at), 0);
    expect(engine.stats.memtableFreezes).toBeGreaterThan(20);
    expect(engine.stats.takeBacks).toBe(0);
    expect(engine.stats.takenBack).toBe(0);
    // A working set of four of the smallest memtables rewritten in order: the second pass grows the
    // memtable and takes the first pass's runs back, most of their 256 entries.
    const chunk = (at: number) => Array.from({ length: 16 }, (_, i) => at + i);
    for (let round = 1; round <= 3; round++) for (let at = 0; at < 256; at += 16) await put(chunk(at), round);
    const s = engine.stats;
    expect(s.memtableGrows).toBe(1);
    expect(s.takeBacks).toBe(1);
    expect(s.takenBack).toBeGreaterThan(128);
    expect(s.takenBack).toBeLessThanOrEqual(256);
    // At most the merge in progress at each take-back is dropped.
    expect(s.takeBackDroppedMerges).toBeLessThanOrEqual(s.takeBacks);
    for (let i = 0; i < 256; i++) expect(dec.decode(engine.get(key(i)))).toBe("3");
    await engine.close();
  });

  it("keeps a given memtableKeys whatever the writes", async () => {
    const engine = await Engine.open(new LocalStore(await tempDir()), { memtableKeys: 1_024, checkpointWalObjects: 0, checkpointWalBytes: 0 });
    for (let round = 0; round < 10; round++) {
      const b = new WriteBatch();
      for (let i = 0; i < 3_000; i++) b.put(key(i), enc.encode(`${round}`));
      await engine.commit(b);
    }
    expect(engine.stats.memtableKeys).toBe(1_024);
    expect(engine.stats.memtableGrows + engine.stats.memtableShrinks).toBe(0);
    expect(engine.stats.takeBacks).toBe(0);
    expect(engine.stats.memtableFreezes).toBeGreaterThan(10);
    await engine.close();
  });
});
