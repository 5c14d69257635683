/**
 * @module A full checkpoint's merge and key section compare a key only past
 * the bytes it shares with the key before: a run cursor counts them
 * (`RunCursor.shared`, at least, over dead entries and block starts), the
 * snapshot's merge compares the moved cursor's key with the runner-up's from
 * there, and the segment's key section counts on from there. A count too
 * high would hand entries out of order or write a key section whose keys a
 * reopen rebuilds wrong, so each is checked against the keys themselves:
 * keys that are prefixes of one another, long shared prefixes, neighbours
 * one byte apart, non-ASCII keys, dead entries between live ones, several
 * runs and the memtable interleaved.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "taquba";
import { writeSegments, type CheckpointWriter } from "../../runtime/engine/checkpoint.js";
import { BLOCK_ENTRIES, type KeyRun, KeyRunBuilder, RunCursor } from "../../runtime/engine/key-run.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { RunLiveness } from "../../runtime/engine/run-liveness.js";
import { SnapshotMerge } from "../../runtime/engine/snapshot-merge.js";
import { decodeSegmentTail, readKeySection, readSegment } from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { type TestRandom, testRandom } from "../support/seed.js";

const PIECES = ["a", "b", "0", "1", "/", "é", "日", "😀", "\u0000", "~"];

/** Sorted distinct keys in ladders of prefixes ("p", "pa", "pa0", ...) over a few long stems, and siblings one byte apart. */
function ladderKeys(r: TestRandom, n: number): string[] {
  const stems = ["", "q/jobs/00000", "x".repeat(40), "é/ü/", "k😀/"];
  const keys = new Set<string>();
  while (keys.size < n) {
    let k = stems[r.int(stems.length)]!;
    const parts = 1 + r.int(6);
    for (let i = 0; i < parts; i++) {
      k += PIECES[r.int(PIECES.length)]!;
      // Every rung of the ladder is a key of its own now and then.
      if (r.random() < 0.3) keys.add(k);
    }
    keys.add(k);
  }
  return [...keys].sort(compareKeys);
}

/** Bytes two keys' UTF-8 share from the start. */
function sharedBytes(a: string, b: string): number {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  return i;
}

function build(keys: readonly string[]): KeyRun {
  const b = new KeyRunBuilder();
  for (const [i, k] of keys.entries()) b.add(k, i % 3 === 0 ? new Uint8Array(20).fill(i & 0xff) : i);
  return b.finish();
}

describe("comparisons past the shared prefix", () => {
  it("a run cursor's shared count is at most what its key shares with the live key before, and all of it between live neighbours of a block", () => {
    const r = testRandom("run cursor shared");
    for (let round = 0; round < 12; round++) {
      const keys = ladderKeys(r, 40 + r.int(600));
      const run = build(keys);
      const live = new RunLiveness(run.count, BLOCK_ENTRIES);
      const dead = new Set<number>();
      const deadShare = [0, 0.2, 0.6, 0.95][round % 4]!;
      for (let i = 0; i < keys.length; i++) {
        if (r.random() < deadShare) {
          live.kill(i, Math.floor(i / BLOCK_ENTRIES));
          dead.add(i);
        }
      }
      const c = new RunCursor(run, live);
      let prev = -1;
      let exact = 0;
      while (c.advance()) {
        const k = c.keyString();
        expect(k).toBe(keys[c.index]);
        if (prev >= 0) {
          const truly = sharedBytes(keys[prev]!, k);
          expect(c.shared, `${JSON.stringify(keys[prev])} then ${JSON.stringify(k)}`).toBeLessThanOrEqual(truly);
          // Live neighbours within a block: the count is the whole shared prefix, or the merge gains nothing.
          if (c.index === prev + 1 && c.index % BLOCK_ENTRIES !== 0) {
            expect(c.shared).toBe(truly);
            exact++;
          }
        } else expect(c.shared).toBe(0);
        prev = c.index;
      }
      if (deadShare === 0) expect(exact).toBeGreaterThan(keys.length / 2);
    }
  });

  it(
    "a snapshot's merge over interleaved runs and the memtable hands out every live entry in order, and its segments are those the key-and-value path writes",
    async () => {
      const r = testRandom("snapshot merge shared");
      for (let round = 0; round < 8; round++) {
        const state = new LayeredState({ memtableKeys: 16 + r.int(200), writeSlice: 1, idleSlice: 0, maxRuns: 4 + r.int(6) });
        const keys = ladderKeys(r, 300 + r.int(1500));
        const model = new Map<string, Uint8Array>();
        // Shuffled, so every run holds keys from all over and the runs interleave entry by entry.
        const order = keys.map((_, i) => i).sort(() => r.random() - 0.5);
        for (const i of order) {
          const v = new Uint8Array(1 + r.int(40)).fill(i & 0xff);
          state.set(keys[i]!, v);
          model.set(keys[i]!, v);
          if (r.int(100) === 0) state.freeze();
        }
        for (let i = 0; i < keys.length; i += 1 + r.int(6)) {
          state.delete(keys[i]!);
          model.delete(keys[i]!);
        }
        // Rewrites go to the memtable and kill their keys in the runs.
        for (let i = r.int(5); i < keys.length; i += 1 + r.int(12)) {
          const v = Uint8Array.of(1, 2, 3);
          state.set(keys[i]!, v);
          model.set(keys[i]!, v);
        }
        if (r.int(2) === 0) state.mergeStep(r.int(400));
        const expected = [...model.keys()].sort(compareKeys);
        const snap = state.snapshot();
        const merge = snap.entries() as SnapshotMerge;
        const walked: string[] = [];
        for (let at = merge.step(); at !== SnapshotMerge.END; at = merge.step()) {
          const k = at === SnapshotMerge.MEMTABLE ? merge.key : merge.cursor!.keyString();
          // What a run's key shares with its cursor's key before, it shares with any key handed out between them.
          if (at !== SnapshotMerge.MEMTABLE && walked.length > 0) {
            expect(merge.cursor!.shared).toBeLessThanOrEqual(sharedBytes(walked[walked.length - 1]!, k));
          }
          walked.push(k);
        }
        expect(walked).toEqual(expected);

        const store = new MemoryStore();
        const writer = (prefix: string): CheckpointWriter => {
          let n = 0;
          return {
            store,
            prefix,
            retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
            epoch: 1,
            maxSegmentBytes: 4096 + r.int(8192),
            blockBytes: 256 + r.int(512),
            nextSegmentNumber: () => ++n,
            stopped: () => false,
          };
        };
        const w1 = writer("old/");
        const w2 = { ...writer("new/"), maxSegmentBytes: w1.maxSegmentBytes, blockBytes: w1.blockBytes };
        const oldRefs = await writeSegments(w1, [...state.scan()], 0);
        const newRefs = await writeSegments(w2, state.snapshot().entries(), 0);
        expect(newRefs.length).toBe(oldRefs.length);
        const read: string[] = [];
        for (let s = 0; s < oldRefs.length; s++) {
          const a = (await store.get(`old/${oldRefs[s]!.name}`))!.body;
          const b = (await store.get(`new/${newRefs[s]!.name}`))!.body;
          expect(Buffer.from(b).equals(Buffer.from(a)), `segment ${s}`).toBe(true);
          // The key section rebuilds the keys a reopen loads from it.
          const tail = decodeSegmentTail("seg", b, b.byteLength);
          const fromSection: string[] = [];
          readKeySection("seg", tail, (key, keyLen) => fromSection.push(key.toString("utf8", 0, keyLen)));
          const whole: string[] = [];
          readSegment("seg", b, (k) => whole.push(k));
          expect(fromSection).toEqual(whole);
          read.push(...whole);
        }
        expect(read).toEqual(expected);
      }
    },
    HEAVY_TEST_MS,
  );
});
