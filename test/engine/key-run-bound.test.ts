import { afterEach, describe, expect, it, vi } from "vitest";
import { KeyBytes, KeyRunBuilder, type KeyRun } from "../../runtime/engine/key-run.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import type { Manifest, SegmentRef } from "../../runtime/engine/manifest.js";
import { type StoredValue } from "../../runtime/engine/paged-value.js";
import { loadSegments, type StoreContext } from "../../runtime/engine/recovery.js";
import { SegmentBuilder } from "../../runtime/engine/segment-format.js";
import { StoreCorruptedError } from "../../runtime/errors.js";
import { Engine, MemoryStore, WriteBatch } from "../../runtime/index.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

type Entry = [string, Uint8Array | undefined];

const BLOCK_BYTES = 4096;

/**
 * Keys with long shared prefixes (past the one-byte and the two-byte shared
 * lengths), ASCII and not; values empty, at the thresholds where a run
 * stages, copies, or refers to them, at the segment's block size, and
 * tombstones.
 */
function randomEntries(r: TestRandom, n: number): Entry[] {
  const long = "p/".padEnd(70, "x");
  const longer = "q/".padEnd(200, "y");
  const heads = ["j/", long, longer, "é/", "x/\u{1f600}/", "k"];
  const sizes = [0, 1, 21, 22, 23, 64, 65, 150, 1024, 1025, BLOCK_BYTES, BLOCK_BYTES * 2];
  const keys = new Set<string>();
  while (keys.size < n) keys.add(`${heads[r.int(heads.length)]}${String(r.int(1e6)).padStart(7, "0")}${r.int(4) === 0 ? "ü" : ""}`);
  return [...keys].sort(compareKeys).map((k): Entry => {
    const form = r.int(8);
    if (form === 0) return [k, undefined];
    if (form === 1) return [k, new TextEncoder().encode(k.slice(-1 - r.int(Math.min(9, k.length))))];
    // Runs of the same value: the run writes such a value once.
    if (form === 2) return [k, new Uint8Array(3).fill(9)];
    const len = form === 3 ? sizes[r.int(sizes.length)]! : r.int(700);
    return [k, Uint8Array.from({ length: len }, () => r.int(256))];
  });
}

/** The run a builder growing from its default capacity makes of `entries` (values as they are, tombstones left out). */
function grown(entries: Entry[]): KeyRun {
  const b = new KeyRunBuilder();
  for (const [k, v] of entries) if (v !== undefined) b.add(k, v);
  return b.finish();
}

function expectSameRun(got: KeyRun, want: KeyRun): void {
  expect(got.count).toBe(want.count);
  expect(Buffer.compare(got.bytes, want.bytes)).toBe(0);
  expect([...got.blockStarts]).toEqual([...want.blockStarts]);
  expect(got.lastKey).toBe(want.lastKey);
  expect(got.ascii).toBe(want.ascii);
  expect(got.refs.map((v) => Buffer.from(v).toString("hex"))).toEqual(want.refs.map((v) => Buffer.from(v).toString("hex")));
}

/** Every entry of `entries` read from `get`: its value, or none for a tombstone. */
function expectReads(get: (key: string) => StoredValue | undefined, entries: Entry[]): void {
  for (const [k, v] of entries) {
    const got = get(k);
    if (v === undefined) expect(got, k).toBeUndefined();
    else expect(Buffer.from(got as Uint8Array).toString("hex"), k).toBe(Buffer.from(v).toString("hex"));
  }
}

/** A store holding each of `runs` (oldest first) as a segment run of `parts` segments, read whole at open (no key section). */
async function storeOf(runs: Entry[][], parts: number): Promise<{ ctx: StoreContext; manifest: Manifest }> {
  const store = new MemoryStore();
  const segments: SegmentRef[] = [];
  for (const [r, entries] of runs.entries()) {
    const per = Math.ceil(entries.length / parts);
    for (let p = 0; p < parts; p++) {
      const part = entries.slice(p * per, (p + 1) * per);
      const b = new SegmentBuilder(BLOCK_BYTES, 4096, { keySection: false });
      for (const [k, v] of part) b.add(k, v);
      const seg = b.finish();
      const name = `seg/${r + 1}-${p + 1}`;
      await store.put(name, seg);
      segments.push({ name, bytes: seg.length, entries: part.length, firstKey: part[0]![0], lastKey: part[part.length - 1]![0], run: r + 1 });
    }
  }
  const manifest: Manifest = { id: 1, epoch: 1, walNext: 1, segments, fences: [], createdAt: 0 };
  return { ctx: { store, prefix: "", retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } }, manifest };
}

/** The runs open adds to its state, and the state. */
async function opened(ctx: StoreContext, manifest: Manifest): Promise<{ runs: KeyRun[]; state: LayeredState }> {
  const runs: KeyRun[] = [];
  const addRun = LayeredState.prototype.addRun;
  vi.spyOn(LayeredState.prototype, "addRun").mockImplementation(function (this: LayeredState, run: KeyRun) {
    runs.push(run);
    addRun.call(this, run);
  });
  const state = (await loadSegments(ctx, manifest)) as LayeredState;
  state.stopIdleMerges();
  return { runs, state };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a key run builder given a bound on its bytes", () => {
  it("builds byte for byte the run a growing builder builds, within its bound, past it, and far past it", () => {
    const r = testRandom("key run bound");
    const entries = randomEntries(r, 7000);
    const want = grown(entries);
    const n = want.count;
    // Exactly its bytes, well over, none, under the small sizes, and a large one (a plain buffer) overrun into the large growth.
    for (const bound of [want.bytes.length, want.bytes.length * 2, 0, 4096, want.bytes.length >>> 1]) {
      const b = new KeyRunBuilder(4096, n, bound);
      for (const [k, v] of entries) if (v !== undefined) b.add(k, v);
      const got = b.finish();
      expectSameRun(got, want);
      // The same bytes read the same; the filter, built apart, answers for every key all the same.
      if (bound !== 0) continue;
      const kb = new KeyBytes();
      const found = { valueAt: 0 };
      for (const [k, v] of entries) {
        const i = got.find(k, kb.set(k), found);
        if (v === undefined) expect(i, k).toBe(-1);
        else expect(Buffer.from(got.value(found.valueAt) as Uint8Array).toString("hex"), k).toBe(Buffer.from(v).toString("hex"));
      }
    }
    // Over a MiB, so the halved bound (past half a MiB) went on in the large growth.
    expect(want.bytes.length).toBeGreaterThan(1.1 * 1024 * 1024);
  });

  it("takes back entries past a mark that overran its bound, and goes on as though they never came", () => {
    const r = testRandom("key run bound rollback");
    const entries = randomEntries(r, 3000).filter(([, v]) => v !== undefined);
    const kept = entries.filter((_, i) => i < 1000 || i >= 2000);
    const want = grown(kept);
    for (const bound of [want.bytes.length, 64 * 1024]) {
      const b = new KeyRunBuilder(4096, entries.length, bound);
      for (const [k, v] of entries.slice(0, 1000)) b.add(k, v!);
      const mark = b.mark();
      // These overrun the small bound; taken back, they leave the bytes before the mark as they were.
      for (const [k, v] of entries.slice(1000, 2000)) b.add(k, v!);
      b.rollback(mark);
      for (const [k, v] of entries.slice(2000)) b.add(k, v!);
      expectSameRun(b.finish(), want);
    }
  });

  it("refuses keys out of order as a growing builder does", () => {
    const b = new KeyRunBuilder(4096, 2, 1024);
    b.add("b", new Uint8Array([1]));
    expect(() => b.add("a", new Uint8Array([2]))).toThrow(/not strictly ascending at "a"/);
  });
});

describe("open of segment runs read whole", () => {
  it("builds each run in one buffer of its bound, byte for byte the run a growing builder builds, and reads back every key", async () => {
    const r = testRandom("open bound");
    const older = randomEntries(r, 6000).map(([k, v]): Entry => [k, v ?? new Uint8Array([r.int(256)])]);
    // The newer run rewrites and deletes a third of the older keys and adds keys of its own.
    const newer = randomEntries(r, 2000);
    const rewritten = new Map<string, Uint8Array | undefined>(newer);
    for (const [k] of older) if (r.int(3) === 0 && !rewritten.has(k)) rewritten.set(k, r.int(2) === 0 ? undefined : new Uint8Array(r.int(200)).fill(5));
    const newerEntries = [...rewritten].sort(([a], [b]) => compareKeys(a, b));
    const { ctx, manifest } = await storeOf([older, newerEntries], 3);
    const { runs, state } = await opened(ctx, manifest);
    expect(runs).toHaveLength(2);
    expectSameRun(runs[0]!, grown(older));
    expectSameRun(runs[1]!, grown(newerEntries));
    for (const run of runs) {
      // One plain buffer: not a resizable one grown into (which a run of over a MiB of an estimate takes).
      expect((run.bytes.buffer as ArrayBuffer & { resizable: boolean }).resizable).toBe(false);
      expect(run.bytes.byteOffset).toBe(0);
    }
    expect(runs[0]!.bytes.length).toBeGreaterThan(1024 * 1024);
    const model = new Map<string, Uint8Array | undefined>(older);
    for (const [k, v] of newerEntries) model.set(k, v);
    expectReads((k) => state.get(k), [...model]);
    expect(state.size).toBe([...model.values()].filter((v) => v !== undefined).length);
  });

  it("refuses a manifest that lists a segment far larger than it is, whatever size it lists", async () => {
    const r = testRandom("open bound lie");
    const { ctx, manifest } = await storeOf([randomEntries(r, 500)], 2);
    for (const bytes of [2 ** 29, 2 ** 40, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
      const lying: Manifest = { ...manifest, segments: manifest.segments.map((s, i) => (i === 1 ? { ...s, bytes } : s)) };
      await expect(loadSegments(ctx, lying)).rejects.toThrow(StoreCorruptedError);
      await expect(loadSegments(ctx, lying)).rejects.toThrow(/segment is \d+ bytes, but its manifest lists/);
    }
  });
});

describe("an engine reopened after full checkpoints", () => {
  it("reads every key as a model says, across reopens", async () => {
    const r = testRandom("reopen after full checkpoints");
    const store = new MemoryStore();
    const opts = { checkpointWalObjects: 0, checkpointWalBytes: 0, maxSegmentRuns: 1, maxSegmentBytes: 64 * 1024, segmentBlockBytes: BLOCK_BYTES };
    const model = new Map<string, Uint8Array>();
    const pool = randomEntries(r, 4000);
    for (let round = 0; round < 3; round++) {
      const engine = await Engine.open(store, opts);
      for (let i = 0; i < pool.length; i += 500) {
        const b = new WriteBatch();
        for (const [k, v] of pool.slice(i, i + 500)) {
          if (r.int(3) === 0) continue;
          if (v === undefined || r.int(5) === 0) {
            b.delete(k);
            model.delete(k);
          } else {
            b.put(k, v);
            model.set(k, v);
          }
        }
        await engine.commit(b);
      }
      await engine.checkpoint();
      await engine.close();
      const reopened = await Engine.open(store, opts);
      for (const [k] of pool) {
        const want = model.get(k);
        const got = reopened.get(k);
        if (want === undefined) expect(got, k).toBeUndefined();
        else expect(Buffer.from(got!).toString("hex"), k).toBe(Buffer.from(want).toString("hex"));
      }
      expect([...reopened.scan()].map(([k]) => k)).toEqual([...model.keys()].sort(compareKeys));
      await reopened.close();
    }
  });
});
