/**
 * @module Open's one walk per key section, attacked where a section turns
 * out unusable part way: runs of several segments whose sections hold many
 * entries the open pages, tombstones killing keys of older runs, and then a
 * value in its block that the open's policy does not page (so the walk's
 * entries are taken back and the segment read whole), at random places. The
 * loaded state is compared with a model of the runs applied oldest first,
 * and with the state loaded from whole segments only (a store without
 * ranged reads).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, type ObjectStore } from "taquba";
import type { Manifest, SegmentRef } from "../../runtime/engine/manifest.js";
import { isPaged, heldValue, type StoredValue } from "../../runtime/engine/paged-value.js";
import { loadSegments } from "../../runtime/engine/recovery.js";
import { SegmentBuilder } from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const RETRY = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
const POLICY = { keyPrefixes: ["p/", "q/\u{10000}"], minBytes: 64 };
const LENGTHS = [0, 1, 20, 63, 64, 65, 100, 300];

/** A key under one of the prefixes (paged: p/; partly paged: q/; never: r/), sharing long runs of bytes. */
function randomKey(r: TestRandom): string {
  const head = ["p/", "p/", "p/", "q/", "q/\u{10000}", "r/"][r.int(6)]!;
  return `${head}${"x".repeat(r.int(3) * 20)}${String(r.int(300)).padStart(3, "0")}${["", "\ue000", "\u{1f600}", "é"][r.int(4)]}`;
}

/** Reading a value as it was stored: a paged one by the run it names, a held one by its bytes. */
function show(v: StoredValue, key: string): string {
  if (isPaged(v)) return `run ${v}`;
  return Buffer.from(heldValue(key, v as Parameters<typeof heldValue>[1])).toString("hex");
}

async function build(r: TestRandom): Promise<{ store: MemoryStore; manifest: Manifest; model: Map<string, { bytes: Uint8Array; run: number }> }> {
  const store = new MemoryStore();
  const segments: SegmentRef[] = [];
  const model = new Map<string, { bytes: Uint8Array; run: number }>();
  const runs = 1 + r.int(4);
  for (let run = 1; run <= runs; run++) {
    const keys = [...new Set(Array.from({ length: 20 + r.int(400) }, () => randomKey(r)))].sort(compareKeys);
    // Mostly paged entries; the first run is a snapshot (no tombstones kill anything older).
    const parts = 1 + r.int(3);
    const per = Math.ceil(keys.length / parts);
    for (let s = 0; s < parts; s++) {
      const slice = keys.slice(s * per, (s + 1) * per);
      if (slice.length === 0) continue;
      const b = new SegmentBuilder(256 + r.int(2048), 4096, { keySection: true });
      for (const k of slice) {
        const tomb = run > 1 && r.int(5) === 0;
        const len = k.startsWith("p/") ? [64, 65, 100, 300, 0, 20][r.int(r.int(4) === 0 ? 6 : 4)]! : LENGTHS[r.int(LENGTHS.length)]!;
        const value = tomb ? undefined : Uint8Array.from({ length: len }, (_, i) => (i * 7 + run) & 127);
        b.add(k, value);
        if (value === undefined) model.delete(k);
        else model.set(k, { bytes: value, run });
      }
      const bytes = b.finish();
      const name = `seg/${run}-${s}`;
      await store.put(name, bytes);
      segments.push({ name, bytes: bytes.length, entries: b.entries, firstKey: slice[0]!, lastKey: slice[slice.length - 1]!, run });
    }
  }
  return { store, manifest: { id: 1, epoch: 1, walNext: 1, fences: [], createdAt: 0, segments }, model };
}

async function load(store: ObjectStore, manifest: Manifest): Promise<[string, string][]> {
  const state = (await loadSegments({ store, prefix: "", retry: RETRY }, manifest, undefined, POLICY))!;
  state.stopIdleMerges();
  return [...state.scan()].map(([k, v]) => [k, show(v, k)]);
}

/** The same store without ranged reads: every segment is read whole. */
function wholeOnly(store: ObjectStore): ObjectStore {
  return { get: (k) => store.get(k), put: (k, v) => store.put(k, v), list: (p) => store.list(p), delete: (k) => store.delete(k) } as ObjectStore;
}

describe("open's key section walk taken back part way", () => {
  it("builds what the model and whole segments hold, whatever entry turns a section unusable", async () => {
    const r = testRandom("section rollback attack");
    for (let round = 0; round < 40; round++) {
      const { store, manifest, model } = await build(r);
      const pages = (k: string, len: number) => len >= POLICY.minBytes && POLICY.keyPrefixes.some((p) => k.startsWith(p));
      const want = [...model.entries()]
        .sort((a, b) => compareKeys(a[0], b[0]))
        .map(([k, { bytes, run }]): [string, string] => [k, pages(k, bytes.length) ? `run ${run}` : Buffer.from(bytes).toString("hex")]);
      expect(await load(store, manifest)).toEqual(want);
      expect(await load(wholeOnly(store), manifest)).toEqual(want);
    }
  });
});
