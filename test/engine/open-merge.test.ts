/**
 * @module Open's k-way merge of segment runs (open-merge.ts): a writer's
 * open of many overlapping segment runs builds one key run whose every key
 * has the value of the newest run holding it (none when that is a
 * tombstone), exactly the state a model of the runs gives and the state the
 * run-by-run load (kills by dead bits) gives; writes after the open mark
 * the merged run's entries dead as they did the runs'; a damaged run is
 * refused naming its segment.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StoreCorruptedError } from "taquba";
import type { Manifest } from "../../runtime/engine/manifest.js";
import { loadSegments } from "../../runtime/engine/recovery.js";
import { KEY_SECTION_INLINE_BYTES } from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { ctxOf, type Entries, model, POLICY, show, storeOf } from "../support/segment-runs.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** A key space small enough that runs overwrite and delete each other's keys often: ASCII and not, shared prefixes. */
function keyOf(r: TestRandom): string {
  const heads = ["j/", "p/jobs/0000001000/", "é/", "x/\u{1f600}/", "k", "j/a"];
  return `${heads[r.int(heads.length)]}${String(r.int(400)).padStart(4, "0")}${r.int(5) === 0 ? "ü" : ""}`;
}

/**
 * One run's entries: tombstones, key tails, empty, small, 64 B (paged under
 * j/), large values. Values the policy holds stay within the key section's
 * inline bound unless `heldInBlocks` (a segment whose section leaves a held
 * value in its blocks is read whole, run by run).
 */
function runOf(r: TestRandom, n: number, heldInBlocks = false): Entries {
  const keys = new Set<string>();
  while (keys.size < n) keys.add(keyOf(r));
  return [...keys].sort(compareKeys).map((k) => {
    const form = r.int(7);
    if (form === 0) return [k, undefined];
    if (form === 1) return [k, enc(k.slice(-1 - r.int(Math.min(4, k.length - 2))))];
    const len = [0, r.int(64), 64, 65, 100 + r.int(900)][form - 2]!;
    const held = !k.startsWith("j/");
    return [k, Uint8Array.from({ length: held && !heldInBlocks ? Math.min(len, KEY_SECTION_INLINE_BYTES) : len }, () => r.int(256))];
  });
}

async function load(store: MemoryStore, manifest: Manifest) {
  const state = (await loadSegments(ctxOf(store), manifest, undefined, POLICY))!;
  state.stopIdleMerges();
  return state;
}

type State = Awaited<ReturnType<typeof load>>;

/** Every key of the space and every key the model has: the state's value of it, a scan both ways, the size. */
function expectState(state: State, want: Map<string, string>, space: readonly string[]): void {
  for (const k of new Set([...space, ...want.keys()])) expect(show(k, state.get(k)), k).toBe(want.get(k) ?? "absent");
  const sorted = [...want.keys()].sort(compareKeys);
  expect([...state.scan()].map(([k, v]) => `${k}=${show(k, v)}`)).toEqual(sorted.map((k) => `${k}=${want.get(k)}`));
  expect([...state.scan({ reverse: true })].map(([k]) => k)).toEqual([...sorted].reverse());
  expect(state.size).toBe(want.size);
}

describe("open merges segment runs k-way", () => {
  it(
    "builds one key run holding each key's newest value, as the model and the run-by-run load do",
    async () => {
      const r = testRandom("open merge model");
      for (let round = 0; round < 6; round++) {
        // An older compaction's large run, then many small ones over the same keys; some empty.
        const runs = [runOf(r, 900), ...Array.from({ length: 4 + r.int(20) }, () => (r.int(6) === 0 ? [] : runOf(r, 1 + r.int(300))))];
        const want = model(runs);
        const space = Array.from({ length: 2000 }, () => keyOf(r));
        const merged = await storeOf(runs, 1 + r.int(200));
        const state = await load(merged.store, merged.manifest);
        // One run: the segment runs were merged while read, not probed and merged after.
        expect(state.runCount).toBe(1);
        expectState(state, want, space);
        // A run without key sections (run 1, read first) sends the open run by run, with dead bits for
        // superseded entries: the same state.
        const byRuns = await storeOf(runs, 1 + r.int(200), (run) => run !== 1);
        const reference = await load(byRuns.store, byRuns.manifest);
        expectState(reference, want, space);
        // Writes and deletes after the open mark the merged run's entries dead as they did the runs'.
        for (let i = 0; i < 400; i++) {
          const k = keyOf(r);
          if (r.int(2) === 0) {
            expect(state.delete(k)).toBe(want.has(k));
            expect(reference.delete(k)).toBe(want.has(k));
            want.delete(k);
          } else {
            state.set(k, enc(`v${i}`));
            reference.set(k, enc(`v${i}`));
            want.set(k, show(k, enc(`v${i}`)));
          }
        }
        expectState(state, want, space);
        expectState(reference, want, space);
      }
    },
    HEAVY_TEST_MS,
  );

  it("runs shaped as a fill's checkpoints (ascending stretches that touch, overlap or nest) give the model's state", async () => {
    // One run leads for long stretches here, and the merge then compares a run's next key with the
    // least of the others from where the key before it differed: keys that are prefixes of others,
    // stretches whose ends overlap, a run that jumps back below another's, and tombstones test that.
    const r = testRandom("open merge fill stretches");
    const idOf = (n: number, width: number) => (width === 0 ? String(n) : String(n).padStart(width, "0"));
    for (let round = 0; round < 8; round++) {
      const width = [0, 4, 10][r.int(3)]!;
      const families = ["j/jobs/", "p/0/", "p/00/", "j/jobs/x"].slice(0, 1 + r.int(4));
      const runs: Entries[] = [];
      let next = r.int(50);
      for (let run = 0, count = 3 + r.int(18); run < count; run++) {
        // Mostly just past the last stretch; sometimes back into it, or well below it.
        const start = r.int(4) === 0 ? r.int(next + 1) : Math.max(0, next - r.int(4));
        const length = r.int(6) === 0 ? 0 : 1 + r.int(250);
        next = Math.max(next, start + length);
        const entries: Entries = [];
        for (const family of families) {
          for (let id = start; id < start + length; id++) {
            const key = `${family}${idOf(id, width)}`;
            const form = r.int(10);
            entries.push([
              key,
              form === 0 ? undefined : form < 4 ? enc(key.slice(-1 - r.int(3))) : enc(`${family.length}`.repeat(form === 9 ? 64 : 1 + r.int(10))),
            ]);
          }
        }
        const unique = new Map(entries);
        runs.push([...unique].sort(([a], [b]) => compareKeys(a, b)));
      }
      const want = model(runs);
      const space = Array.from({ length: 1500 }, () => `${families[r.int(families.length)]}${idOf(r.int(next + 20), width)}`);
      const merged = await storeOf(runs, 1 + r.int(120));
      const state = await load(merged.store, merged.manifest);
      expect(state.runCount).toBe(1);
      expectState(state, want, space);
    }
  });

  it("a tombstone in the oldest run only says the key is absent; in a newer one it hides every older entry", async () => {
    const v = (s: string) => enc(s);
    const runs: Entries[] = [
      [
        ["a", undefined],
        ["b", v("b1")],
        ["c", v("c1")],
      ],
      [
        ["b", undefined],
        ["c", v("c2")],
      ],
      [
        ["a", v("a3")],
        ["c", undefined],
        ["d", v("d3")],
      ],
      [["c", v("c4")]],
    ];
    const { store, manifest } = await storeOf(runs, 1);
    const state = await load(store, manifest);
    expect(state.runCount).toBe(1);
    expectState(
      state,
      new Map([
        ["a", show("", v("a3"))],
        ["c", show("", v("c4"))],
        ["d", show("", v("d3"))],
      ]),
      ["a", "b", "c", "d", "e"],
    );
  });

  it("a held value left in a segment's blocks is no reason to read it whole when a newer run supersedes it; a live one is", async () => {
    const big = new Uint8Array(KEY_SECTION_INLINE_BYTES + 1).fill(7);
    const dead = await storeOf(
      [
        [
          ["k1", big],
          ["k2", enc("a")],
        ],
        [["k1", enc("b")]],
      ],
      10,
    );
    const merged = await load(dead.store, dead.manifest);
    expect(merged.runCount).toBe(1);
    expectState(
      merged,
      new Map([
        ["k1", show("", enc("b"))],
        ["k2", show("", enc("a"))],
      ]),
      ["k0", "k3"],
    );
    const live = await storeOf(
      [
        [
          ["k1", big],
          ["k2", enc("a")],
        ],
        [["k2", enc("b")]],
      ],
      10,
    );
    const byRuns = await load(live.store, live.manifest);
    expect(byRuns.runCount).toBe(2);
    expectState(
      byRuns,
      new Map([
        ["k1", show("", big)],
        ["k2", show("", enc("b"))],
      ]),
      ["k0", "k3"],
    );
  });

  it("refuses a run whose segment starts before the previous one ends, or that holds other than the manifest's count, naming the segment", async () => {
    const r = testRandom("open merge damage");
    const runs = [runOf(r, 300), runOf(r, 200), runOf(r, 200)];
    const { store, manifest } = await storeOf(runs, 50);
    // The newest run's segments swapped: its second starts before its first ends.
    const segs = [...manifest.segments];
    const newest = segs.map((s, i) => [s, i] as const).filter(([s]) => s.run === 3);
    const [a, ia] = newest[0]!;
    const [b, ib] = newest[1]!;
    segs[ia] = b;
    segs[ib] = a;
    const swapped = { ...manifest, segments: segs };
    await expect(loadSegments(ctxOf(store), swapped, undefined, POLICY)).rejects.toThrow(
      new RegExp(`"${a.name}".*segment key range overlaps the previous segment of its run`),
    );
    const miscounted = { ...manifest, segments: manifest.segments.map((s) => (s === b ? { ...s, entries: s.entries + 1 } : s)) };
    const err = await loadSegments(ctxOf(store), miscounted, undefined, POLICY).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect(String(err)).toMatch(new RegExp(`"${b.name}".*segment holds ${b.entries} entries, the manifest says ${b.entries + 1}`));
  });

  it("a segment gone while merging ends the load as missing, naming it", async () => {
    const r = testRandom("open merge missing");
    const runs = [runOf(r, 300), runOf(r, 200), runOf(r, 200)];
    const { store, manifest } = await storeOf(runs, 50);
    const gone = manifest.segments.filter((s) => s.run === 2)[1]!.name;
    await store.delete(gone);
    const missing: string[] = [];
    expect(await loadSegments(ctxOf(store), manifest, (key) => missing.push(key), POLICY)).toBeUndefined();
    expect(missing).toEqual([gone]);
  });
});
