/**
 * @module Segment runs written straight into a store with a manifest that
 * lists them, and the model of the state they hold, for the tests of
 * open's merge of runs: values under `j/` of at least 64 bytes are paged
 * (to their run), others held.
 */
import { MemoryStore } from "taquba";
import type { Manifest, SegmentRef } from "../../runtime/engine/manifest.js";
import { heldValue, isPaged, type PagePolicy, type StoredValue } from "../../runtime/engine/paged-value.js";
import type { StoreContext } from "../../runtime/engine/recovery.js";
import { SegmentBuilder } from "../../runtime/engine/segment-format.js";

/** One run's entries in key order; undefined is a tombstone. */
export type Entries = [string, Uint8Array | undefined][];

export const POLICY: PagePolicy = { keyPrefixes: ["j/"], minBytes: 64 };

export const ctxOf = (store: MemoryStore): StoreContext => ({ store, prefix: "", retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });

/** Segments of up to `perSegment` entries (an empty run is one empty segment), each run listed by `run` number from 1. */
export async function storeOf(runs: Entries[], perSegment: number, keySection: (run: number) => boolean = () => true) {
  const store = new MemoryStore();
  const segments: SegmentRef[] = [];
  let n = 0;
  for (let run = 0; run < runs.length; run++) {
    const entries = runs[run]!;
    for (let at = 0; at === 0 || at < entries.length; at += perSegment) {
      const part = entries.slice(at, at + perSegment);
      const b = new SegmentBuilder(256, 4096, { keySection: keySection(run) });
      for (const [k, v] of part) b.add(k, v);
      const seg = b.finish();
      const name = `seg/1-${++n}`;
      await store.put(name, seg);
      segments.push({ name, bytes: seg.length, entries: part.length, firstKey: part[0]?.[0] ?? "", lastKey: part[part.length - 1]?.[0] ?? "", run: run + 1 });
    }
  }
  const manifest: Manifest = { id: runs.length, epoch: 1, walNext: 1, segments, fences: [], createdAt: 0 };
  return { store, manifest };
}

/** A value as the model writes it: a paged one by its run, a held one (packed or not) by its bytes. */
export const show = (key: string, v: StoredValue | undefined) =>
  v === undefined ? "absent" : isPaged(v) ? `paged:${v}` : `bytes:${Buffer.from(heldValue(key, v)).toString("hex")}`;

/** The model: runs applied oldest first; a value the policy pages is its run's number, others their bytes. */
export function model(runs: Entries[]): Map<string, string> {
  const m = new Map<string, string>();
  runs.forEach((entries, run) => {
    for (const [k, v] of entries) {
      if (v === undefined) m.delete(k);
      else m.set(k, k.startsWith("j/") && v.length >= POLICY.minBytes ? `paged:${run + 1}` : show(k, v));
    }
  });
  return m;
}
