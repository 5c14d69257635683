/**
 * @module Open's k-way merge over many segment runs: 40 runs, empty ones
 * among them, tombstones for keys no older run holds and over paged
 * values, keys whose UTF-16 order differs from their UTF-8 byte order
 * (U+E000..U+FFFD against surrogate pairs), and damaged segments; and an
 * engine's own 36 runs on real files reopened by a writer and a reader.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, LocalStore, StoreCorruptedError, WriteBatch } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { HEAVY_TEST_MS, scaledForLoad } from "../support/load.js";
import { loadSegments } from "../../runtime/engine/recovery.js";
import { KEY_SECTION_INLINE_BYTES } from "../../runtime/engine/segment-format.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { ctxOf, type Entries, model, POLICY, show, storeOf } from "../support/segment-runs.js";

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function keyOf(r: TestRandom): string {
  const heads = ["j/", "a/\uFFFD", "a/\u{1F600}", "a/\uE000", "a/\u{10FFFF}", "a/\u00e9", "b/"];
  return `${heads[r.int(heads.length)]}${String(r.int(60)).padStart(3, "0")}`;
}
function runOf(r: TestRandom, n: number): Entries {
  const keys = new Set<string>();
  while (keys.size < n) keys.add(keyOf(r));
  return [...keys].sort(byBytes).map((k) => {
    const f = r.int(4);
    if (f === 0) return [k, undefined];
    return [
      k,
      Uint8Array.from({ length: f === 3 ? (k.startsWith("j/") ? 1500 : KEY_SECTION_INLINE_BYTES) : Math.min(r.int(40), KEY_SECTION_INLINE_BYTES) }, () =>
        r.int(256),
      ),
    ];
  });
}
const tempDir = useTempDirs("taquba-open-merge-runs-");

// CPU-bound merges of dozens of runs: under several suites at once on two cores they ran past the default 30 s.
describe("open merge of many runs", { timeout: HEAVY_TEST_MS }, () => {
  it("an engine's 36 runs on real files, paged values, deletes and keys beyond the BMP: a fresh open and a reader find the model's state", async () => {
    const dir = await tempDir();
    const r = testRandom("open merge engine runs");
    const options = {
      checkpointWalObjects: 0,
      checkpointWalBytes: 0,
      maxSegmentRuns: 64,
      maxSegmentBytes: 8 * 1024,
      segmentBlockBytes: 2 * 1024,
      pageValues: { keyPrefixes: ["j/"], minBytes: 64 },
      retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
      onBackgroundError: () => {},
    };
    const engine = await Engine.open(new LocalStore(dir), options);
    const want = new Map<string, string>();
    for (let run = 0; run < 36; run++) {
      const batch = new WriteBatch();
      // A large first run (newer runs outweighing it would make a checkpoint compact), then small ones:
      // every sixth covers one key only, the rest write new keys and overwrite and delete older ones.
      for (let i = 0, n = run === 0 ? 3000 : run % 6 === 5 ? 1 : 1 + r.int(40); i < n; i++) {
        // Mostly new keys (so no checkpoint finds the runs worth compacting), some overwritten or deleted.
        const k = run === 0 ? `${keyOf(r)}/${i}` : r.int(3) === 0 ? keyOf(r) : `${keyOf(r)}/${run}`;
        if (run > 0 && r.int(4) === 0) {
          batch.delete(k);
          want.delete(k);
        } else {
          const v = `${run}:${i}:`.repeat(k.startsWith("j/") && r.int(2) === 0 ? 200 : 1 + r.int(4));
          batch.put(k, new TextEncoder().encode(v));
          want.set(k, v);
        }
      }
      await engine.commit(batch);
      await engine.checkpoint();
    }
    expect(engine.stats.segmentRuns).toBeGreaterThanOrEqual(30);
    await engine.close();
    const reopened = await Engine.open(new LocalStore(dir), options);
    const reader = await EngineReader.open(new LocalStore(dir));
    try {
      const sorted = [...want.keys()].sort(byBytes);
      // Paged values are read back first; the scan then runs in the same turn as the last check.
      for (let p = reopened.warm(sorted); p; p = reopened.warm(sorted)) await p;
      for (const view of [reopened, reader]) {
        const got = [...view.scan()].map(([k, v]) => `${k}=${Buffer.from(v).toString()}`);
        expect(got).toEqual(sorted.map((k) => `${k}=${want.get(k)}`));
      }
    } finally {
      await reopened.close();
    }
  });

  it("40 runs (some empty) with tombstones, paged values over 1 KiB and keys beyond the BMP ordered by bytes give the model's state", async () => {
    const r = testRandom("open merge attack");
    const runCounts: number[] = [];
    for (let round = 0; round < 4; round++) {
      const runs = Array.from({ length: 40 }, (_, i) => (i % 7 === 3 ? [] : runOf(r, 1 + r.int(80))));
      // a tombstone for a key no older run holds
      runs[39]!.push(["zz/never", undefined]);
      const want = model(runs);
      const { store, manifest } = await storeOf(runs, 1 + r.int(20));
      const state = (await loadSegments(ctxOf(store), manifest, undefined, POLICY))!;
      state.stopIdleMerges();
      runCounts.push(state.runCount);
      for (const k of want.keys()) expect(show(k, state.get(k)), k).toBe(want.get(k));
      const sorted = [...want.keys()].sort(byBytes);
      expect([...state.scan()].map(([k]) => k)).toEqual(sorted);
      expect(state.size).toBe(want.size);
      expect(state.get("zz/never")).toBeUndefined();
    }
    // Every open merged (one run), none fell back to the run-by-run load.
    expect(runCounts).toEqual([1, 1, 1, 1]);
  });

  it("a segment damaged in its tail or last block is refused as StoreCorruptedError naming it, never loaded as another state", async () => {
    const r = testRandom("open merge damaged");
    const runs = Array.from({ length: 32 }, () => runOf(r, 30));
    const { store, manifest } = await storeOf(runs, 10);
    for (const at of [-1, -10, -45, -60, -100]) {
      const victim = manifest.segments[17]!.name;
      const orig = (await store.get(victim))!.body;
      const bad = Uint8Array.from(orig);
      bad[bad.length + at] = bad[bad.length + at]! ^ 0x40;
      await store.put(victim, bad);
      const err = await loadSegments(ctxOf(store), manifest, undefined, POLICY).then(
        (s) => s,
        (e: unknown) => e,
      );
      expect(err, `flip at ${at}`).toBeInstanceOf(StoreCorruptedError);
      expect(String((err as Error).message)).toContain(victim);
      await store.put(victim, orig);
    }
  });

  it(
    "a flip of any byte of a segment is refused naming it, or leaves the model's state",
    async () => {
      const r = testRandom("open merge every byte");
      const runs = Array.from({ length: 12 }, () => runOf(r, 30));
      const want = model(runs);
      const { store, manifest } = await storeOf(runs, 10);
      const victim = manifest.segments[17]!.name;
      const orig = (await store.get(victim))!.body;
      let refused = 0;
      for (let at = 0; at < orig.length; at++) {
        const bad = Uint8Array.from(orig);
        bad[at] = bad[at]! ^ 0x01;
        await store.put(victim, bad);
        let state: Awaited<ReturnType<typeof loadSegments>>;
        try {
          state = await loadSegments(ctxOf(store), manifest, undefined, POLICY);
        } catch (err) {
          expect(err, `flip at ${at}`).toBeInstanceOf(StoreCorruptedError);
          expect((err as Error).message).toContain(victim);
          refused++;
          continue;
        }
        // Not refused: the flip is in a block open does not read (its values come from the key section, or are paged).
        expect(state, `flip at ${at}`).toBeDefined();
        state!.stopIdleMerges();
        for (const k of want.keys()) expect(show(k, state!.get(k)), `flip at ${at}: ${k}`).toBe(want.get(k));
      }
      expect(refused).toBeGreaterThan(100);
      // About 2,100 opens of a segment run: seconds when quiet, 168 s at a load of 30-40 on two cores.
    },
    scaledForLoad(60_000),
  );

  it("runs that hold the same keys again and again: the entries passed over count toward the turns the merge gives the event loop", async () => {
    // 5,000 keys in each of 20 runs, the newer runs deleting or writing them again: 100,000 entries read,
    // 5,000 taken. Counting only the taken ones, this merge gave the event loop no turn.
    const keys = Array.from({ length: 5000 }, (_, i) => `a/${String(i).padStart(5, "0")}`);
    const runs: Entries[] = Array.from({ length: 20 }, (_, run) =>
      keys.map((k, i): [string, Uint8Array | undefined] => [k, (i + run) % 3 === 0 ? undefined : Uint8Array.of(run, i & 0xff)]),
    );
    const { store, manifest } = await storeOf(runs, 5000);
    let turns = 0;
    let done = false;
    const tick = () => {
      if (done) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const state = (await loadSegments(ctxOf(store), manifest, undefined, POLICY).finally(() => (done = true)))!;
    state.stopIdleMerges();
    expect(turns).toBeGreaterThanOrEqual(10);
    const want = model(runs);
    expect(state.size).toBe(want.size);
    for (const k of keys) expect(show(k, state.get(k)), k).toBe(want.get(k) ?? "absent");
  });
});
