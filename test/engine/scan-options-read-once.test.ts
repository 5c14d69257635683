/**
 * @module A scan reads each of its options once: an options object whose
 * getters answer differently on each read (or count their reads) gets the
 * scan of what they answered first, over the engine's memtable alone and
 * over a state whose memtable is merged with runs.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type ScanOptions } from "taquba";
import { LayeredState } from "../../runtime/engine/layered-state.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** Options whose every field is a getter that counts its reads and answers `first` once, then `later`. */
function shiftingOptions(first: ScanOptions, later: ScanOptions): { opts: ScanOptions; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const opts = {};
  for (const name of ["prefix", "start", "startExclusive", "end", "limit", "reverse"] as const) {
    Object.defineProperty(opts, name, {
      enumerable: true,
      get() {
        const n = reads.get(name) ?? 0;
        reads.set(name, n + 1);
        return n === 0 ? first[name] : later[name];
      },
    });
  }
  return { opts: opts as ScanOptions, reads };
}

/** Keys `a/000`..`a/299` and `b/000`..`b/009`, most of them frozen into runs, the rest in the memtable. */
function layeredState(): LayeredState {
  const state = new LayeredState({ memtableKeys: 100, writeSlice: 1, idleSlice: 0 });
  for (let i = 0; i < 300; i++) state.set(`a/${String(i).padStart(3, "0")}`, enc(`a${i}`));
  for (let i = 0; i < 10; i++) state.set(`b/${String(i).padStart(3, "0")}`, enc(`b${i}`));
  return state;
}

describe("scan options", () => {
  it("reads each option once and scans by what it read (the engine's memtable)", async () => {
    const engine = await Engine.open(new MemoryStore());
    try {
      const b = new WriteBatch();
      for (const k of ["a/1", "a/2", "a/3", "a/4", "b/1"]) b.put(k, enc(k));
      await engine.commit(b);
      const forward = shiftingOptions({ prefix: "a/", start: "a/2", end: "a/4", limit: 10 }, { prefix: "b/", start: "a/0", end: "z", limit: 1 });
      expect([...engine.scan(forward.opts)].map(([k]) => k)).toEqual(["a/2", "a/3"]);
      for (const [name, n] of forward.reads) expect({ name, reads: n }).toEqual({ name, reads: 1 });

      const reversed = shiftingOptions(
        { prefix: "a/", start: "a/1", startExclusive: true, reverse: true },
        { prefix: "", startExclusive: false, reverse: false },
      );
      expect([...engine.keys(reversed.opts)]).toEqual(["a/4", "a/3", "a/2"]);
      for (const [name, n] of reversed.reads) expect({ name, reads: n }).toEqual({ name, reads: 1 });
    } finally {
      await engine.close();
    }
  });

  it("reads each option once and scans by what it read (memtable merged with runs)", () => {
    const state = layeredState();
    expect(state.runCount).toBeGreaterThan(0);
    const forward = shiftingOptions({ prefix: "a/", start: "a/097", end: "a/103", limit: 10 }, { prefix: "b/", start: "a/0", end: "z", limit: 1 });
    expect([...state.scan(forward.opts)].map(([k]) => k)).toEqual(["a/097", "a/098", "a/099", "a/100", "a/101", "a/102"]);
    for (const [name, n] of forward.reads) expect({ name, reads: n }).toEqual({ name, reads: 1 });

    const reversed = shiftingOptions(
      { prefix: "a/", start: "a/296", startExclusive: true, reverse: true },
      { prefix: "", startExclusive: false, reverse: false },
    );
    expect([...state.scan(reversed.opts)].map(([k]) => k)).toEqual(["a/299", "a/298", "a/297"]);
    for (const [name, n] of reversed.reads) expect({ name, reads: n }).toEqual({ name, reads: 1 });
  });

  it("scans alike with options of different shapes in turn", () => {
    const state = layeredState();
    const keys = (o: ScanOptions) => [...state.scan(o)].map(([k]) => k);
    for (let i = 0; i < 50; i++) {
      expect(keys({ prefix: "a/", limit: 2 })).toEqual(["a/000", "a/001"]);
      expect(keys({ start: "a/298", end: "b/001", reverse: true })).toEqual(["b/000", "a/299", "a/298"]);
      expect(keys({ ...{ prefix: "a/" }, start: "a/150", end: "a/153", limit: 5 })).toEqual(["a/150", "a/151", "a/152"]);
      expect(keys({ limit: 0 })).toEqual([]);
      expect(keys({ prefix: "b/", startExclusive: true, start: "b/007" })).toEqual(["b/008", "b/009"]);
    }
  });
});
