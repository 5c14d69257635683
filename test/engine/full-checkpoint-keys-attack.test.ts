/**
 * @module Full checkpoints (every checkpoint a compaction) of an engine
 * whose state lies in key runs, with keys chosen where the bytes path can
 * go wrong: keys whose UTF-16 order differs from their UTF-8 byte order
 * (U+E000..U+FFFF against astral characters), keys sharing long prefixes
 * and one byte apart, the one-character keys at the ends, deletes, empty
 * values and values just under, at and past the segment block size; with
 * commits landing while the checkpoint writes, and a reopen after each.
 * Every read and scan answers as a model ordered by `compareKeys`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type EngineOptions } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

beforeAll(() => {
  // A tiny memtable: most of the state lies in key runs, which the bytes path copies from.
  stateTuning.memtableKeys = 32;
});
afterAll(() => {
  stateTuning.memtableKeys = undefined;
});

const BLOCK = 512;
/** Characters where UTF-16 and UTF-8 order disagree (the first four sort after the last three in UTF-16, before them in UTF-8), and plain ones. */
const MIDDLES = ["\ue000", "\uff61", "\uffff", "\ufb01", "\u{10000}", "\u{1f600}", "\u{10ffff}", "a", "é", "~", "\u07ff", "\u0800"];
const LONG = "p/".padEnd(300, "x");

function seededKey(r: TestRandom): string {
  switch (r.int(4)) {
    case 0:
      return `u/${MIDDLES[r.int(MIDDLES.length)]}${r.int(2) === 0 ? "" : MIDDLES[r.int(MIDDLES.length)]}${r.int(3)}`;
    case 1:
      // Long shared prefixes, neighbours differing in their last byte, and a key that is another's prefix.
      return `${LONG}${r.int(2) === 0 ? "" : String.fromCharCode(0x30 + r.int(10))}${r.int(3) === 0 ? "" : MIDDLES[r.int(MIDDLES.length)]}`;
    case 2:
      return r.int(2) === 0 ? "\u{10ffff}" : "\u0001";
    default:
      return `k/${r.int(400)}`;
  }
}

function seededValue(r: TestRandom, version: number): Uint8Array {
  const size = [0, 0, 1, BLOCK - 40, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7, 20][r.int(9)]!;
  const v = new Uint8Array(size);
  for (let i = 0; i < size; i++) v[i] = (version + i * 31) & 0xff;
  return v;
}

const hex = (v: Uint8Array | undefined) => (v === undefined ? "absent" : Buffer.from(v).toString("hex"));

async function expectModel(engine: Engine, model: Map<string, Uint8Array>, tried: Set<string>, where: string): Promise<void> {
  await engine.warm(tried);
  const expected = [...model.keys()].sort(compareKeys);
  const scanned = Array.from(engine.scan({}), ([k, v]) => [k, hex(v)]);
  expect(
    scanned.map(([k]) => k),
    `${where}: scan order`,
  ).toEqual(expected);
  expect(scanned, `${where}: scanned values`).toEqual(expected.map((k) => [k, hex(model.get(k))]));
  for (const k of tried) expect(hex(engine.get(k)), `${where}: get ${JSON.stringify(k)}`).toBe(hex(model.get(k)));
  // A prefix scan over the keys whose orders disagree starts and ends where the model does.
  const under = expected.filter((k) => k.startsWith("u/"));
  expect(
    Array.from(engine.scan({ prefix: "u/" }), ([k]) => k),
    `${where}: prefix scan`,
  ).toEqual(under);
}

describe("full checkpoints of key runs with keys where the bytes path could go wrong", () => {
  for (const paged of [false, true]) {
    it(`read as a model after each checkpoint and reopen${paged ? " (values paged)" : ""}`, { timeout: 180_000 }, async () => {
      const r = testRandom(`full checkpoint keys attack ${paged}`);
      const store = new MemoryStore();
      const opts: EngineOptions = {
        checkpointWalObjects: 0,
        checkpointWalBytes: 0,
        maxSegmentRuns: 1,
        segmentBlockBytes: BLOCK,
        maxSegmentBytes: 8 * BLOCK,
        ...(paged ? { pageValues: { keyPrefixes: ["u/", "p/", "k/"], minBytes: BLOCK - 40 } } : {}),
      };
      const model = new Map<string, Uint8Array>();
      const tried = new Set<string>();
      let engine = await Engine.open(store, opts);
      let version = 0;
      let compactions = 0;
      const commitSome = async (n: number) => {
        for (let c = 0; c < n; c++) {
          const batch = new WriteBatch();
          for (let o = 0; o < 1 + r.int(30); o++) {
            const k = seededKey(r);
            tried.add(k);
            if (r.int(3) === 0) {
              batch.delete(k);
              model.delete(k);
            } else {
              const v = seededValue(r, version++);
              batch.put(k, v);
              model.set(k, v);
            }
          }
          await engine.commit(batch);
        }
      };
      for (let round = 0; round < 12; round++) {
        await commitSome(5 + r.int(10));
        // Commits land while the checkpoint writes: they are past its cut, in the WAL a reopen replays.
        const checkpoint = engine.checkpoint();
        await commitSome(r.int(4));
        await checkpoint;
        await expectModel(engine, model, tried, `round ${round}`);
        if (r.int(2) === 0) await engine.checkpoint();
        compactions += engine.stats.compactions;
        await engine.close();
        engine = await Engine.open(store, opts);
        await expectModel(engine, model, tried, `reopened, round ${round}`);
      }
      compactions += engine.stats.compactions;
      await engine.close();
      expect(compactions, "full checkpoints ran").toBeGreaterThanOrEqual(12);
    });
  }
});
