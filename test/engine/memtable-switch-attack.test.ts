/**
 * @module The memtable's switch from the built-in comparison to
 * `compareKeys` attacked inside the layered state: keys above U+D800
 * (astral, U+E000..U+FFFF; the engine refuses lone surrogates before
 * they reach the state) arriving after ASCII ones while
 * runs exist, while a merge is part way, right before or after a freeze that
 * holds some keys (the held table built at once or kept), and with snapshots
 * taken before the switch and read after it. Each step is compared with a
 * map sorted by code point (UTF-8 byte order). An engine with small
 * memtables takes such keys at a random point among commits while
 * checkpoints (snapshots of the memtable) run, with reopens, and scans
 * what a model sorted by UTF-8 bytes holds, also after a last reopen.
 */
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { describe, expect, it } from "vitest";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { testRandom, type TestRandom } from "../support/seed.js";

/** Code point order written without `compareKeys`: surrogate units weigh above every other unit. */
function reference(a: string, b: string): number {
  const w = (s: string, i: number) => s.charCodeAt(i) + (s.charCodeAt(i) >= 0xd800 && s.charCodeAt(i) <= 0xdfff ? 0x10000 : 0);
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (w(a, i) !== w(b, i)) return w(a, i) < w(b, i) ? -1 : 1;
  return Math.sign(a.length - b.length);
}

const UNITS = ["a", "b", "/", "0", "~", "\u00e9", "\ud7ff", "\ue000", "\uffff", "\u{1f600}", "\u{10000}"];

function randomKey(r: TestRandom, plain: boolean): string {
  let s = ["k/", "j/01M8TV", "h/"][r.int(3)]!;
  const n = 1 + r.int(4);
  for (let i = 0; i < n; i++) s += UNITS[r.int(plain ? 7 : UNITS.length)]!;
  return s;
}

const keysOf = (entries: Iterable<[string, StoredValue]>) => Array.from(entries, ([k, v]) => `${k}=${String(v)}`);
const modelOf = (m: Map<string, number>) => [...m.entries()].sort(([a], [b]) => reference(a, b)).map(([k, v]) => `${k}=${v}`);

describe("memtable order switch inside the layered state", () => {
  it("matches a sorted model through freezes with held keys, merges, snapshots and scans", () => {
    const r = testRandom("memtable switch attack");
    for (let round = 0; round < 30; round++) {
      // Held keys: those under h/, so a freeze keeps some in the memtable (built at once or left in place).
      const state = new LayeredState({
        memtableKeys: 8 + r.int(40),
        mergeRatio: 2 + r.int(3),
        writeSlice: 1,
        idleSlice: 0,
        maxRuns: 3 + r.int(6),
        hold: (k) => k.startsWith("h/"),
      });
      const model = new Map<string, number>();
      const snaps: { snap: ReturnType<LayeredState["snapshot"]>; want: string[] }[] = [];
      const plainFor = r.int(300);
      for (let i = 0; i < 400; i++) {
        const key = randomKey(r, i < plainFor);
        const op = r.int(20);
        if (op < 4) {
          expect(state.delete(key)).toBe(model.delete(key));
        } else if (op === 4) {
          state.freeze();
        } else if (op === 5) {
          state.mergeStep(r.int(30));
        } else if (op === 6) {
          snaps.push({ snap: state.snapshot(), want: modelOf(model) });
        } else {
          state.set(key, i);
          model.set(key, i);
        }
        expect(state.get(key)).toBe(model.get(key));
        if (i % 25 === 0) {
          const want = modelOf(model);
          expect(keysOf(state.scan())).toEqual(want);
          expect(keysOf(state.scan({ reverse: true }))).toEqual([...want].reverse());
          const probe = randomKey(r, false);
          const from = want.filter((e) => reference(e.slice(0, e.lastIndexOf("=")), probe) >= 0);
          expect(keysOf(state.scan({ start: probe }))).toEqual(from);
        }
      }
      expect(state.size).toBe(model.size);
      expect(keysOf(state.scan())).toEqual(modelOf(model));
      state.finishMerges();
      expect(keysOf(state.scan())).toEqual(modelOf(model));
      for (const { snap, want } of snaps) expect(keysOf(snap.entries())).toEqual(want);
    }
  });
});

describe("an engine whose memtable switches order at random points", () => {
  it("matches a UTF-8-sorted model across checkpoints running while the switch happens, freezes and reopens", async () => {
    const r = testRandom("memtable switch engine attack");
    const saved = stateTuning.memtableKeys;
    stateTuning.memtableKeys = 16;
    try {
      for (let round = 0; round < 6; round++) {
        const store = new MemoryStore();
        const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0, pageValues: { keyPrefixes: ["k/"], minBytes: 8, cacheBytes: 1 << 20 } };
        let engine = await Engine.open(store, opts);
        const model = new Map<string, string>();
        const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
        const plainFor = r.int(150);
        const pending: Promise<void>[] = [];
        for (let i = 0; i < 200; i++) {
          const b = new WriteBatch();
          for (let j = 0; j < 1 + r.int(4); j++) {
            const key = randomKey(r, i < plainFor);
            if (r.int(5) === 0) {
              b.delete(key);
              model.delete(key);
            } else {
              const v = `${i}-${j}${"v".repeat(r.int(12))}`;
              b.put(key, new TextEncoder().encode(v));
              model.set(key, v);
            }
          }
          // Commits go on while a checkpoint (a snapshot of the memtable) is written.
          pending.push(engine.commit(b));
          if (r.int(15) === 0) pending.push(engine.checkpoint());
          if (r.int(40) === 0) {
            await Promise.all(pending.splice(0));
            await engine.close();
            engine = await Engine.open(store, opts);
          }
        }
        await Promise.all(pending.splice(0));
        const want = [...model.keys()].sort(byBytes);
        const check = async (e: Engine) => {
          // Warmed first (the cache holds them all): a scan reads values, and a key the model lacks would be a cold read.
          for (let w = e.warm(want); w !== undefined; w = e.warm(want)) await w;
          expect([...e.scan()].map(([k, v]) => [k, new TextDecoder().decode(v)])).toEqual(want.map((k) => [k, model.get(k)]));
        };
        await check(engine);
        await engine.checkpoint();
        await engine.close();
        const reopened = await Engine.open(store, opts);
        await check(reopened);
        await reopened.close();
      }
    } finally {
      stateTuning.memtableKeys = saved;
    }
  });
});
