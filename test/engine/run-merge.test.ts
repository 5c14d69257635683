/**
 * @module A sliced merge of key runs whose inputs die as it runs: the output
 * holds exactly the inputs' live entries, whichever entries die before their
 * copy, after it, or in the slice that copies them; for a run rewritten alone
 * (whose copies are found by rank, not through a map) and for merges of
 * several runs.
 */
import { describe, expect, it } from "vitest";
import { BLOCK_ENTRIES, KeyRunBuilder, RunCursor } from "../../runtime/engine/key-run.js";
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
});
