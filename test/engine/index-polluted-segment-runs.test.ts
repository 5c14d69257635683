/**
 * @module Stored segment runs read while `Object.prototype` holds a plain
 * value under an index, as merging a parsed `{"__proto__": {"0": ...}}`
 * sets it.
 *
 * A fold of stored runs (the runs beside a long compaction read back and
 * merged with a checkpoint's changes) under "0": a run's reader told its
 * end by its list of keys read past the end, found the prototype's value
 * at the end of each run, and the fold handed it on as one more entry,
 * again and again (each read of the ended run found it anew), to be
 * written into the run that replaces them. The fold now yields the runs'
 * entries and the changes, nothing else.
 *
 * Grouping a manifest's segments by run read the last group of an empty
 * list at "-1": a list the prototype holds there took the first segment,
 * which an open then never loaded.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { readNewestManifest, type StoreContext } from "../../runtime/engine/recovery.js";
import { type Manifest, segmentRuns } from "../../runtime/engine/manifest.js";
import { foldRuns } from "../../runtime/engine/run-fold.js";
import { whilePolluted, withPolluted } from "../support/polluted-prototype.js";

const enc = (s: string) => new TextEncoder().encode(s);
const retry = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };

/** Entries a fold is read for at most: one that never ends is cut there. */
const MAX_ENTRIES = 100;

/** The keys, and values as text (null for a tombstone), a fold of `ctx`'s stored runs with `changes` yields (up to `MAX_ENTRIES`). */
async function folded(ctx: StoreContext, changes: [string, Uint8Array | null][]): Promise<[string, string | null][]> {
  const manifest = (await readNewestManifest(ctx))!;
  const runs = segmentRuns(manifest).reverse();
  const out: [string, string | null][] = [];
  for await (const [k, v] of foldRuns(ctx, changes, runs, () => false)) {
    out.push([k, v instanceof Uint8Array ? new TextDecoder().decode(v) : v === null ? null : `not bytes: ${String(v)}`]);
    if (out.length >= MAX_ENTRIES) break;
  }
  return out;
}

describe('a fold of stored runs under a plain "0" on Object.prototype', () => {
  it("yields the runs' entries and the changes, newest first per key, and nothing else", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { flushIntervalMs: 0, maxSegmentRuns: 8 });
    for (let i = 0; i < 4; i++) await engine.commit(new WriteBatch().put(`a/${i}`, enc(`old${i}`)));
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("a/1", enc("new1")).put("b", enc("b")).delete("a/2"));
    await engine.checkpoint();
    await engine.close();
    const ctx: StoreContext = { store, prefix: "", retry };
    const changes: [string, Uint8Array | null][] = [
      ["a/0", enc("mine0")],
      ["c", enc("c")],
    ];
    const clean = await folded(ctx, changes);
    expect(clean.map(([k]) => k)).toEqual(["a/0", "a/1", "a/2", "a/3", "b", "c"]);
    let polluted: [string, string | null][] = [];
    await whilePolluted({ "0": "planted" }, async () => {
      polluted = await folded(ctx, changes);
    });
    expect(polluted).toEqual(clean);
  });
});

describe('a manifest\'s segments grouped by run under a list at "-1" on Object.prototype', () => {
  it("are each in their own run, none handed to the prototype's list", () => {
    const segment = (name: string, run: number) => ({ name, bytes: 1, entries: 1, firstKey: name, lastKey: name, run });
    const manifest: Manifest = {
      id: 3,
      epoch: 1,
      walNext: 4,
      segments: [segment("seg/a", 1), segment("seg/b", 1), segment("seg/c", 2)],
      fences: [],
      createdAt: 0,
    };
    const planted = [segment("seg/planted", 1)];
    const runs = withPolluted({ "-1": planted }, () => segmentRuns(manifest));
    expect(runs.map((run) => run.map((s) => s.name))).toEqual([["seg/a", "seg/b"], ["seg/c"]]);
    expect(planted.map((s) => s.name)).toEqual(["seg/planted"]);
  });
});
