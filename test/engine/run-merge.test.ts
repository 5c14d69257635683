/**
 * @module A sliced merge of key runs whose inputs die as it runs: the output
 * holds exactly the inputs' live entries, whichever entries die before their
 * copy, after it, or in the slice that copies them; for a run rewritten alone
 * (whose copies are found by rank, not through a map) and for merges of
 * several runs.
 */
import { describe, expect, it } from "vitest";
import { BLOCK_ENTRIES, KeyRunBuilder, RunCursor } from "../../runtime/engine/key-run.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { type Layer, layerOf, RunMerge } from "../../runtime/engine/run-merge.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const key = (i: number) => `k/${String(i).padStart(7, "0")}`;

/** `inputs` runs over the keys 0..n-1, each key in one run, values their numbers. */
function layers(r: TestRandom, n: number, inputs: number): { layers: Layer[]; keysOf: number[][] } {
  const keysOf: number[][] = Array.from({ length: inputs }, () => []);
  for (let i = 0; i < n; i++) keysOf[r.int(inputs)]!.push(i);
  const out = keysOf.map((ks) => {
    const b = new KeyRunBuilder();
    for (const k of ks) b.add(key(k), Uint8Array.of(k & 255, (k >> 8) & 255));
    return layerOf(b.finish());
  });
  return { layers: out, keysOf };
}

function liveKeys(l: Layer): string[] {
  const c = new RunCursor(l.run, l.live);
  const out: string[] = [];
  while (c.advance()) out.push(c.keyString());
  return out;
}

describe("run merge", () => {
  for (const inputs of [1, 2, 3]) {
    it(`keeps exactly the live entries of ${inputs} input run(s) killed before, during and after their copies`, () => {
      const r = testRandom(`run merge kills ${inputs}`);
      for (let round = 0; round < 30; round++) {
        const n = 1 + r.int(3000);
        const { layers: ins, keysOf } = layers(r, n, inputs);
        const alive = new Set<number>(Array.from({ length: n }, (_, i) => i));
        const kill = (input: number, index: number, merge?: RunMerge) => {
          const l = ins[input]!;
          if (l.run.count === 0 || !l.live.kill(index, Math.floor(index / BLOCK_ENTRIES))) return;
          alive.delete(keysOf[input]![index]!);
          merge?.killed(input, index);
        };
        const killSome = (count: number, merge?: RunMerge) => {
          for (let k = 0; k < count; k++) {
            const input = r.int(inputs);
            const size = ins[input]!.run.count;
            if (size > 0) kill(input, r.int(size), merge);
          }
        };
        killSome(r.int(n), undefined);
        const usable = ins.filter((l) => l.run.count > 0);
        if (usable.length !== ins.length) continue;
        const merge = new RunMerge(ins);
        while (merge.step(1 + r.int(200))) killSome(r.int(60), merge);
        killSome(r.int(40), merge);
        const out = merge.finish();
        const want = [...alive].sort((a, b) => a - b).map(key);
        expect(out === undefined ? [] : liveKeys(out), `round ${round}, ${n} keys`).toEqual(want);
      }
    });
  }

  it("a run rewritten alone reads as a model under reads, writes, deletes, scans and snapshots between its slices, whatever dies mid-copy", () => {
    const r = testRandom("run rewrite under traffic");
    const norm = (v: StoredValue | undefined) => (v === undefined ? undefined : typeof v === "number" ? v : Array.from(v as Uint8Array).join(","));
    let killedMidCopy = 0;
    for (let round = 0; round < 8; round++) {
      // No freeze unless the test asks, and no idle turns: the rewrite moves only with the writes and slices below.
      const state = new LayeredState({ memtableKeys: 1 << 30, writeSlice: 1 + r.int(4), idleSlice: 0 });
      const n = 2048 + r.int(20_000);
      const model = new Map<string, StoredValue>();
      const b = new KeyRunBuilder();
      for (let i = 0; i < n; i++) {
        b.add(key(i), i % 64);
        model.set(key(i), i % 64);
      }
      state.addRun(b.finish());
      // A drain's shape: the oldest entries die first, then a few at random, until more than half is dead.
      let head = 0;
      while (state.counters.rewrites === 0) {
        const k = r.int(8) === 0 ? key(r.int(n)) : key(head++);
        expect(state.delete(k)).toBe(model.delete(k));
      }
      expect(state.layout.merging).toBe(1);
      let snap: { view: ReturnType<LayeredState["snapshot"]>; want: string[] } | undefined;
      const dump = (entries: Iterable<[string, StoredValue]>) => [...entries].map(([k, v]) => `${k}=${norm(v)}`);
      // Every key is key(i) for some i below n + 200: the model's entries in order from `from` on, `limit` at most.
      const want = (from = 0, limit = Infinity) => {
        const out: string[] = [];
        for (let i = from; i < n + 200 && out.length < limit; i++) if (model.has(key(i))) out.push(`${key(i)}=${norm(model.get(key(i)))}`);
        return out;
      };
      while (state.layout.merging > 0) {
        const before = state.layout.mergeRemaining;
        const op = r.int(100);
        const k = key(r.int(n + 200));
        if (op < 30) {
          const v = 100 + r.int(100);
          state.set(k, v);
          model.set(k, v);
        } else if (op < 55) expect(state.delete(k)).toBe(model.delete(k));
        else if (op < 75) expect(norm(state.get(k))).toEqual(norm(model.get(k)));
        else if (op < 85) {
          const from = r.int(n);
          const limit = 1 + r.int(50);
          expect(dump(state.scan({ start: key(from), limit }))).toEqual(want(from, limit));
        } else if (op < 93) state.mergeStep(1 + r.int(300));
        else if (op < 96) snap = { view: state.snapshot(), want: want() };
        else if (op < 99 && snap !== undefined) expect(dump(snap.view.entries())).toEqual(snap.want);
        else if (r.int(20) === 0) state.freeze();
        // A write that killed an entry the rewrite had already copied kills its copy (the rank path).
        if (op < 55 && state.layout.merging > 0 && state.layout.mergeRemaining < before) killedMidCopy++;
        expect(state.size).toBe(model.size);
      }
      expect(dump(state.scan())).toEqual(want());
      expect(dump(state.scan({ reverse: true }))).toEqual(want().reverse());
      for (let i = 0; i < n; i += 7) expect(norm(state.get(key(i)))).toEqual(norm(model.get(key(i))));
      // What the rewrite made holds only live entries but for those killed after their copy.
      expect(state.layout.runs.every((l) => l.live > 0)).toBe(true);
    }
    expect(killedMidCopy).toBeGreaterThan(50);
  }, 120_000);
});
