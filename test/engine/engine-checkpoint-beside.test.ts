/**
 * @module Incremental checkpoints while a compaction runs: with the
 * compaction's segment puts held (a slow store, not a sleep), incremental
 * checkpoints keep cutting the WAL and publishing, commits are not held by
 * the backlog bound, and the compaction then publishes its run plus every
 * run published since its cut (folded at `maxSegmentRuns`). Reopens, readers and garbage collection see
 * the same state as a plain map throughout.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, type EngineOptions } from "taquba";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { GatedStore } from "../support/gated-store.js";
import { mixedCommits } from "../support/mixed-commits.js";
import { turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (v: Uint8Array | undefined) => (v === undefined ? undefined : new TextDecoder().decode(v));
const retry = { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 };

async function readAll(engine: Engine, keys: string[]): Promise<Map<string, string>> {
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
  return new Map([...engine.scan()].map(([k, v]) => [k, dec(v)!]));
}

async function newestManifest(store: MemoryStore) {
  const keys: string[] = [];
  for await (const o of store.list("manifest/")) keys.push(o.key);
  const key = keys.sort().at(-1)!;
  return decodeManifest(key, (await store.get(key))!.body, Number(key.slice("manifest/".length)));
}

describe("incremental checkpoints beside a compaction", () => {
  for (const paged of [false, true]) {
    it(`publish while the compaction's segment puts are held, and the compaction then keeps their runs${paged ? " (values paged)" : ""}`, async () => {
      const inner = new MemoryStore();
      let armed = false;
      let segmentPuts = 0;
      // Holds the second segment put made once armed: the compaction's, whose first segment is then stored
      // and listed by no manifest while the incremental checkpoints beside it collect garbage.
      const store = new GatedStore(inner, (key) => {
        if (!armed || !key.startsWith("seg/") || ++segmentPuts < 2) return false;
        armed = false;
        return true;
      });
      const opts: EngineOptions = {
        checkpointWalObjects: 2,
        checkpointWalBytes: 0,
        checkpointBacklog: 2,
        maxSegmentRuns: 3,
        maxSegmentBytes: 256,
        retry,
        ...(paged ? { pageValues: { keyPrefixes: ["k/"], minBytes: 0, cacheBytes: 0 } } : {}),
      };
      const engine = await Engine.open(store, opts);
      const model = new Map<string, string>();
      const commit = mixedCommits(engine, model);
      // A compacted state, then incremental runs up to the limit: the next checkpoint is a compaction.
      for (let i = 0; i < 12; i++) await commit(i);
      await engine.checkpoint();
      // How many checkpoints that takes depends on when the compactions came (a run's bytes move them).
      for (let round = 0; round < 4 && engine.stats.segmentRuns < 3; round++) {
        await commit(100 + round);
        await engine.checkpoint();
      }
      expect(engine.stats.segmentRuns).toBe(3);
      const compactionsBefore = engine.stats.compactions;
      const checkpointsBefore = engine.stats.checkpoints;
      armed = true;
      await commit(200);
      await commit(201);
      await store.waitHeld(1);
      expect(engine.stats.compactions).toBe(compactionsBefore);

      // The compaction is stuck at its first segment: incremental checkpoints go on beside it.
      const waitsBefore = engine.stats.backlogWaits;
      for (let i = 300; i < 320; i++) await commit(i);
      for (let i = 0; i < 2000 && engine.stats.walObjectsSinceCheckpoint >= 2; i++) await turns(1);
      expect(engine.stats.compactions, "the compaction has not published").toBe(compactionsBefore);
      expect(engine.stats.checkpoints - checkpointsBefore).toBeGreaterThanOrEqual(5);
      expect(engine.stats.checkpointsBesideCompaction).toBeGreaterThanOrEqual(5);
      expect(engine.stats.backlogWaits, "no commit waited for the compaction").toBe(waitsBefore);
      expect(engine.stats.walObjectsSinceCheckpoint).toBeLessThan(4);
      expect(await readAll(engine, [...model.keys()])).toEqual(new Map([...model].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)))));
      // A reader and a reopen elsewhere see the published state: every commit so far (all were checkpointed
      // or replayed from the WAL the manifests leave).
      const reader = await EngineReader.open(inner, { retry });
      expect(new Map([...reader.scan()].map(([k, v]) => [k, dec(v)!]))).toEqual(model);
      const published = await newestManifest(inner);
      const runsBeside = [...new Set(published.segments.map((s) => s.run))];

      // The compaction goes on and publishes: its run first, then every run published beside it.
      store.release(store.held[0]!.key);
      for (let i = 0; i < 5000 && engine.stats.compactions === compactionsBefore; i++) await turns(1);
      expect(engine.stats.compactions).toBe(compactionsBefore + 1);
      const compacted = await newestManifest(inner);
      // Garbage collection beside the compaction left every segment it lists (its own were listed by no manifest then).
      for (const seg of compacted.segments) expect(await inner.get(seg.name), `segment ${seg.name}`).not.toBeNull();
      const runs = [...new Set(compacted.segments.map((s) => s.run))];
      const besideRuns = runsBeside.filter((r) => r > runsBeside[2]!);
      // Five or more published beside it, folded whenever they reached maxSegmentRuns (3): the newest always, older
      // ones while at most twice what the fold holds.
      expect(besideRuns.length).toBeGreaterThanOrEqual(1);
      expect(besideRuns.length).toBeLessThanOrEqual(3);
      expect(engine.stats.runsFoldedBesideCompaction).toBeGreaterThanOrEqual(1);
      expect(runs.slice(1)).toEqual(besideRuns);
      expect(runs[0]).toBeLessThan(runs[1]!);
      expect(compacted.walNext).toBe(published.walNext);
      expect(await readAll(engine, [...model.keys()])).toEqual(await readAll(engine, [...model.keys()]));
      for (const [k, v] of model) {
        for (let p = engine.warm([k]); p !== undefined; p = engine.warm([k])) await p;
        expect(dec(engine.get(k))).toBe(v);
      }
      for (let i = 400; i < 406; i++) await commit(i);
      await engine.checkpoint();
      await engine.close();

      // Garbage collection kept exactly what the newest manifest lists.
      const last = await newestManifest(inner);
      const segs: string[] = [];
      for await (const o of inner.list("seg/")) segs.push(o.key);
      expect(segs.sort()).toEqual(last.segments.map((s) => s.name).sort());
      const reopened = await Engine.open(inner, opts);
      expect(await readAll(reopened, [...model.keys()])).toEqual(new Map([...model].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)))));
      await reopened.close();
    });
  }

  it("do not leave commits held until a compaction cut past one and a half triggers ends (a long WAL tail at open)", async () => {
    const inner = new MemoryStore();
    const opts: EngineOptions = { checkpointWalObjects: 8, checkpointWalBytes: 0, checkpointBacklog: 2, maxSegmentRuns: 3, retry };
    const put = (e: Engine, key: string, value: string) => e.commit(new WriteBatch().put(key, enc(value)));
    // Three runs (a compaction is due at the next checkpoint), then 15 WAL objects no checkpoint covers.
    const first = await Engine.open(inner, { ...opts, checkpointWalObjects: 0 });
    const base = new WriteBatch();
    for (let i = 0; i < 40; i++) base.put(`b/${i}`, enc(`base ${i}`));
    await first.commit(base);
    for (let run = 0; run < 3; run++) {
      await put(first, `k/${run}`, `run ${run}`);
      await first.checkpoint();
    }
    expect(first.stats.segmentRuns).toBe(3);
    for (let i = 0; i < 15; i++) await put(first, `t/${i}`, `tail ${i}`);
    await first.close();

    // Reopened, the tail (15 objects, past 1.5 triggers of 8) starts a compaction at once, whose segment put is held.
    const store = new GatedStore(inner, (key) => key.startsWith("seg/"));
    const engine = await Engine.open(store, opts);
    await store.waitHeld(1);
    const compactionsBefore = engine.stats.compactions;
    expect(engine.stats.segmentRuns, "the compaction has not published").toBe(3);
    // One more object reaches the backlog bound (16 since the newest manifest) but only an eighth of a trigger
    // past the cut; the commit after it waits on the backlog, and its own object (a quarter) adds too little WAL to
    // reach the half trigger past the cut that otherwise starts a checkpoint beside a compaction.
    await put(engine, "k/before", "before");
    const waitsBefore = engine.stats.backlogWaits;
    let acknowledged = false;
    const commit = put(engine, "k/after", "after").then(() => {
      acknowledged = true;
    });
    // An incremental checkpoint beside the compaction covers it: its segment put is let through.
    for (let i = 0; i < 2000 && !acknowledged; i++) {
      for (const h of [...store.held].slice(1)) store.release(h.key);
      await turns(1);
    }
    expect(acknowledged, "the commit was acknowledged while the compaction still waits").toBe(true);
    expect(engine.stats.compactions).toBe(compactionsBefore);
    expect(engine.stats.backlogWaits, "it waited on the backlog").toBe(waitsBefore + 1);
    expect(engine.stats.checkpointsBesideCompaction).toBe(1);
    store.hold = () => false;
    for (const h of [...store.held]) store.release(h.key);
    await commit;
    await engine.checkpoint();
    expect(engine.stats.compactions).toBe(compactionsBefore + 1);
    await engine.close();
    const reopened = await Engine.open(inner, opts);
    expect(new Map([...reopened.scan()].map(([k, v]) => [k, dec(v)!]))).toEqual(
      new Map([
        ["k/0", "run 0"],
        ["k/1", "run 1"],
        ["k/2", "run 2"],
        ["k/after", "after"],
        ["k/before", "before"],
        ...Array.from({ length: 40 }, (_, i) => [`b/${i}`, `base ${i}`] as [string, string]),
        ...Array.from({ length: 15 }, (_, i) => [`t/${i}`, `tail ${i}`] as [string, string]),
      ]),
    );
    await reopened.close();
  });
});
