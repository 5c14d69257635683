/**
 * @module A freeze copied into its run in slices (frozen-memtable.ts): the
 * state's reads, scans, deletes, rewrites and snapshots between the slices
 * against a plain map (entries killed before and after their copy), held
 * values staying in the memtable, idle turns doing the copy with no writes
 * and stopping when told, and an engine closed with a freeze half copied
 * reopening with everything it committed.
 */
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, WriteBatch } from "taquba";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import type { ScanOptions } from "../../runtime/engine/scan.js";
import { firstDifference } from "../support/first-difference.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const key = (i: number) => `k/${String(i).padStart(5, "0")}`;

/** The model's entries within `opts`, in the scan's order. */
function modelScan(model: Map<string, StoredValue>, opts: ScanOptions): [string, StoredValue][] {
  let out = [...model.entries()];
  if (opts.start !== undefined) out = out.filter(([k]) => k >= opts.start!);
  if (opts.end !== undefined) out = out.filter(([k]) => k < opts.end!);
  out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (opts.reverse) out.reverse();
  return opts.limit === undefined ? out : out.slice(0, opts.limit);
}

describe("a freeze copied in slices", () => {
  it("reads, scans and snapshots what a plain map holds between its slices, entries killed before and after their copy", { timeout: 120_000 }, () => {
    for (let seed = 0; seed < 4; seed++) {
      const r = testRandom(`frozen memtable model ${seed}`);
      const state = new LayeredState({ memtableKeys: 40 + r.int(200), mergeRatio: 2 + r.int(3), writeSlice: 1 + r.int(4), idleSlice: 0 });
      const model = new Map<string, StoredValue>();
      let snap: { view: ReturnType<LayeredState["snapshot"]>; model: [string, StoredValue][] } | undefined;
      let sawFrozen = 0;
      for (let op = 0; op < 4_000; op++) {
        const k = key(r.int(800));
        const pick = r.int(100);
        if (pick < 60) {
          const v = r.int(1_000_000);
          state.set(k, v);
          model.set(k, v);
        } else if (pick < 75) {
          const [deleted, inModel] = [state.delete(k), model.delete(k)];
          if (deleted !== inModel) expect.fail(`op ${op}, delete ${k}: ${deleted}, the model ${inModel}`);
        } else if (pick < 88) {
          if (state.get(k) !== model.get(k) || state.has(k) !== model.has(k)) {
            expect.fail(`op ${op}, ${k}: get ${state.get(k)} has ${state.has(k)}, the model ${model.get(k)} ${model.has(k)}`);
          }
        } else if (pick < 94) {
          const [lo, hi] = [key(r.int(800)), key(r.int(800))].sort();
          const opts: ScanOptions = { start: lo, end: hi, reverse: r.int(2) === 0, limit: r.int(3) === 0 ? r.int(50) : undefined };
          expect(firstDifference(state.scan(opts), modelScan(model, opts))).toBeUndefined();
        } else if (pick < 96) {
          // A full checkpoint's copy: later writes leave it as it was.
          if (snap !== undefined) expect(firstDifference(snap.view.entries(), snap.model)).toBeUndefined();
          snap = { view: state.snapshot(), model: modelScan(model, {}) };
          expect(state.layout.frozen).toBe(0);
        } else state.mergeStep(r.int(64));
        if (state.layout.frozen > 0) sawFrozen++;
        // Checked after every op, so an expect call only on a difference (16,000 of them took seconds under load).
        if (state.size !== model.size) expect.fail(`op ${op}: size ${state.size}, the model ${model.size}`);
      }
      expect(sawFrozen).toBeGreaterThan(100);
      expect(firstDifference(state.scan(), modelScan(model, {}))).toBeUndefined();
      state.finishMerges();
      expect(state.layout.frozen).toBe(0);
      expect(firstDifference(state.scan({ reverse: true }), modelScan(model, { reverse: true }))).toBeUndefined();
      expect(
        firstDifference(
          [...model.keys()].map((k) => [k, state.get(k)]),
          [...model],
        ),
      ).toBeUndefined();
    }
  });

  it("kills in the run an entry rewritten or deleted after its copy, and not one copied after it was killed", () => {
    const state = new LayeredState({ memtableKeys: 100, writeSlice: 1, idleSlice: 0 });
    for (let i = 0; i < 100; i++) state.set(key(i), i);
    // Frozen: 100 entries; a few writes copied some of the lowest keys.
    for (let i = 0; i < 10; i++) state.set(key(1000 + i), -i);
    expect(state.layout.frozen).toBeGreaterThan(0);
    expect(state.layout.frozen).toBeLessThan(100);
    state.delete(key(0)); // copied already
    state.set(key(1), "again"); // copied already
    state.delete(key(99)); // not copied yet
    state.set(key(98), "later"); // not copied yet
    state.finishMerges();
    expect(state.get(key(0))).toBeUndefined();
    expect(state.get(key(1))).toBe("again");
    expect(state.get(key(99))).toBeUndefined();
    expect(state.get(key(98))).toBe("later");
    const keys = [...state.scan()].map(([k]) => k);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(99 + 10 - 1);
    expect(state.layout.runs.reduce((n, l) => n + l.live, 0)).toBe(96);
  });

  it("keeps held values in the memtable, by identity, and copies the rest", () => {
    const held = new Uint8Array([1, 2, 3]);
    const state = new LayeredState({ memtableKeys: 100, writeSlice: 1, idleSlice: 0, hold: (_k, v) => v instanceof Uint8Array });
    for (let i = 0; i < 100; i++) state.set(key(i), i % 3 === 0 ? held : i);
    expect(state.layout.frozen).toBeGreaterThan(0);
    expect(state.layout.memtableKeys).toBe(34);
    for (let i = 0; i < 100; i += 3) expect(state.holds(key(i), held)).toBe(true);
    state.finishMerges();
    expect(state.layout.runs[0]!.live).toBe(66);
    for (let i = 0; i < 100; i++) expect(state.get(key(i))).toEqual(i % 3 === 0 ? held : i);
  });

  it("moves what is not held out of a memtable that holds more than it moves", () => {
    const held = new Uint8Array([4, 5]);
    const state = new LayeredState({ memtableKeys: 90, writeSlice: 1, idleSlice: 0, hold: (_k, v) => v instanceof Uint8Array });
    for (let i = 0; i < 90; i++) state.set(key(i), i % 3 === 0 ? i : held);
    expect(state.layout.memtableKeys).toBe(60);
    expect(state.layout.frozen).toBeGreaterThan(0);
    state.set(key(3), "new"); // frozen, maybe copied
    expect(state.delete(key(87))).toBe(true); // frozen, not yet copied
    state.finishMerges();
    expect(state.layout.runs[0]!.live).toBe(28);
    for (let i = 0; i < 90; i++) expect(state.get(key(i))).toEqual(i === 3 ? "new" : i === 87 ? undefined : i % 3 === 0 ? i : held);
    expect([...state.scan()].length).toBe(89);
  });

  it("keeps key order between the frozen table and the memtable for keys past the BMP and above the surrogates", { timeout: 60_000 }, () => {
    const r = testRandom("frozen memtable odd keys");
    const odd = ["a", "é", "\u{10FFFF}", "\uE000", "\uFFFF", "z", "\u{1F600}", "\uD7FF"];
    const name = () => `${odd[r.int(odd.length)]}${odd[r.int(odd.length)]}${r.int(40)}`;
    const state = new LayeredState({ memtableKeys: 64, writeSlice: 1, idleSlice: 0 });
    const model = new Map<string, StoredValue>();
    const byCodePoint = (a: string, b: string) => {
      const x = [...a].map((c) => c.codePointAt(0)!);
      const y = [...b].map((c) => c.codePointAt(0)!);
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return x.length - y.length;
    };
    for (let op = 0; op < 3_000; op++) {
      const k = name();
      if (r.int(5) === 0) expect(state.delete(k)).toBe(model.delete(k));
      else {
        state.set(k, op);
        model.set(k, op);
      }
      if (op % 97 === 0) {
        const expected = [...model.entries()].sort(([a], [b]) => byCodePoint(a, b));
        expect([...state.scan()]).toEqual(expected);
        expect([...state.scan({ reverse: true })]).toEqual(expected.reverse());
      }
    }
    expect(state.counters.freezes).toBeGreaterThan(3);
  });

  it("is copied in idle turns with no writes, and stops when told", async () => {
    const state = new LayeredState({ memtableKeys: 30_000, idleSlice: 1_000 });
    for (let i = 0; i < 30_000; i++) state.set(`i/${String(i).padStart(6, "0")}`, i);
    const left = state.layout.frozen;
    expect(left).toBeGreaterThan(20_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.layout.frozen).toBeLessThan(left);
    for (let turns = 0; state.layout.frozen > 0 && turns < 100; turns++) await new Promise((resolve) => setImmediate(resolve));
    expect(state.layout).toMatchObject({ frozen: 0, runs: [{ live: 30_000 }] });

    const stopped = new LayeredState({ memtableKeys: 30_000, idleSlice: 1_000 });
    for (let i = 0; i < 30_000; i++) stopped.set(`i/${String(i).padStart(6, "0")}`, i);
    stopped.stopIdleMerges();
    const before = stopped.layout.frozen;
    for (let turns = 0; turns < 20; turns++) await new Promise((resolve) => setImmediate(resolve));
    expect(stopped.layout.frozen).toBe(before);
    expect(stopped.get("i/012345")).toBe(12_345);
    expect(stopped.size).toBe(30_000);
  });
});

describe("an engine with a freeze half copied", () => {
  const tempDir = useTempDirs("taquba-frozen-");

  it("reopens with everything committed, closed between slices, after a checkpoint and without one", { timeout: HEAVY_TEST_MS }, async () => {
    const dir = await tempDir();
    const r = testRandom("frozen memtable engine");
    const model = new Map<string, string>();
    const encode = (s: string) => new TextEncoder().encode(s);
    for (let session = 0; session < 4; session++) {
      const engine = await Engine.open(new LocalStore(dir), { memtableKeys: 1_024, checkpointWalObjects: 0, checkpointWalBytes: 0 });
      for (let c = 0; c < 30; c++) {
        const batch = new WriteBatch();
        for (let i = 0; i < 100; i++) {
          const k = key(r.int(3_000));
          if (r.int(8) === 0) {
            batch.delete(k);
            model.delete(k);
          } else {
            const v = `${session}.${c}.${i}`;
            batch.put(k, encode(v));
            model.set(k, v);
          }
        }
        await engine.commit(batch);
        if (session % 2 === 1 && c === 15) await engine.checkpoint();
      }
      // The commits froze memtables whose copies the close cuts short (no idle turn ran since the last).
      expect(engine.stats.memtableFreezes).toBeGreaterThan(0);
      for (const [k, v] of model) expect(new TextDecoder().decode(engine.get(k))).toBe(v);
      await engine.close();
    }
    const engine = await Engine.open(new LocalStore(dir));
    const got = new Map([...engine.scan({ prefix: "k/" })].map(([k, v]) => [k, new TextDecoder().decode(v)]));
    expect(got).toEqual(model);
    await engine.close();
  });
});
