/**
 * @module Attacks on runs beside a compaction folded (the compaction's
 * segment put held, runs published beside it up to the cap): the runs a
 * fold reads back are damaged, cut short, deleted or unreachable mid-fold;
 * the fold's manifest put lands but reports failure on every retry; a
 * reader opens mid-fold. The fold must fail with StoreCorruptedError (or
 * retry past a passing fault) and never publish a run that lost entries;
 * the engine, a reader and a reopen then see the same state as a plain map
 * (or, for a segment really deleted, a StoreCorruptedError for the values
 * paged to it). Also counts the store reads of a fold.
 */
import { describe, expect, it } from "vitest";
import {
  Engine,
  EngineReader,
  MemoryStore,
  StoreCorruptedError,
  StoreUnavailableError,
  withFaults,
  type EngineOptions,
  type FaultyStore,
  type ListOptions,
  type ListedObject,
  type ObjectStore,
  type PutOptions,
  type StoredObject,
} from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { mixedCommits } from "../support/mixed-commits.js";
import { turns } from "../support/turns.js";

const dec = (v: Uint8Array | undefined) => (v === undefined ? undefined : new TextDecoder().decode(v));
const retry = { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 };

/** What a read of a segment returns while armed: the bytes as stored, or something else. */
type Tamper = (key: string, offset: number, bytes: Uint8Array | null) => Promise<Uint8Array | null>;

/** Segment reads pass through `tamper` while it is set; everything else is the inner store's. */
class TamperingStore implements ObjectStore {
  tamper: Tamper | undefined;
  segmentReads = 0;
  /** A put it answers "land" for lands, then reports failure; one it answers "fail" for fails unsent. */
  putFault: ((key: string) => "land" | "fail" | undefined) | undefined;
  constructor(readonly inner: MemoryStore) {}
  async get(key: string): Promise<StoredObject | null> {
    const got = await this.inner.get(key);
    if (this.tamper === undefined || !key.startsWith("seg/")) return got;
    this.segmentReads++;
    const body = await this.tamper(key, 0, got === null ? null : got.body);
    return body === null ? null : { ...got!, body };
  }
  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    const got = await this.inner.getRange(key, offset, length);
    if (this.tamper === undefined || !key.startsWith("seg/")) return got;
    this.segmentReads++;
    return this.tamper(key, offset, got);
  }
  async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    const fault = this.putFault?.(key);
    if (fault === "fail") throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    const result = await this.inner.put(key, body, opts);
    if (fault === "land") throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    return result;
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    return this.inner.list(prefix, opts);
  }
}

const sorted = (m: Map<string, string>) => new Map([...m].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b))));

async function readAll(engine: Engine, keys: string[]): Promise<Map<string, string>> {
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
  return new Map([...engine.scan()].map(([k, v]) => [k, dec(v)!]));
}

interface Setup {
  inner: MemoryStore;
  tampering: TamperingStore;
  /** Reads fail at its rate (0 until a test raises it). */
  faults: FaultyStore;
  gated: GatedStore;
  engine: Engine;
  model: Map<string, string>;
  errors: unknown[];
  opts: EngineOptions;
  compactionsBefore: number;
  commit(i: number): Promise<void>;
}

/** An engine whose compaction is held at its second segment put, with runs published beside it up to the cap. */
async function besideCompaction(paged: boolean): Promise<Setup> {
  const inner = new MemoryStore();
  const tampering = new TamperingStore(inner);
  let armed = false;
  let segmentPuts = 0;
  const faults = withFaults(tampering, { failureRate: 0, seed: 7, ops: ["get"] });
  const gated = new GatedStore(faults, (key) => {
    if (!armed || !key.startsWith("seg/") || ++segmentPuts < 2) return false;
    armed = false;
    return true;
  });
  const errors: unknown[] = [];
  const opts: EngineOptions = {
    checkpointWalObjects: 2,
    checkpointWalBytes: 0,
    checkpointBacklog: 2,
    maxSegmentRuns: 3,
    maxSegmentBytes: 256,
    retry,
    onBackgroundError: (err) => errors.push(err),
    ...(paged ? { pageValues: { keyPrefixes: ["k/"], minBytes: 0, cacheBytes: 0 } } : {}),
  };
  const engine = await Engine.open(gated, opts);
  const model = new Map<string, string>();
  const commit = mixedCommits(engine, model);
  for (let i = 0; i < 12; i++) await commit(i);
  await engine.checkpoint();
  // Incremental runs up to the limit, so the next checkpoint compacts (how many checkpoints that takes depends on
  // when the compactions came: a run's bytes move them).
  for (let round = 0; round < 4 && engine.stats.segmentRuns < 3; round++) {
    await commit(100 + round);
    await engine.checkpoint();
  }
  const compactionsBefore = engine.stats.compactions;
  armed = true;
  await commit(200);
  await commit(201);
  await gated.waitHeld(1);
  return { inner, tampering, faults, gated, engine, model, errors, opts, compactionsBefore, commit };
}

interface Outcome {
  folds: number;
  errors: unknown[];
  segmentReads: number;
}

/**
 * Commits beside the held compaction until a fold has read segments under
 * `tamper` and its checkpoint ended, then lets the compaction publish and
 * checks the engine, a reader and a reopen against the model.
 */
async function attackFold(s: Setup, tamper: Tamper, opts: { afterFold?: () => Promise<void>; lost?: boolean } = {}): Promise<Outcome> {
  const { engine, tampering, gated, model } = s;
  let i = 300;
  // Runs beside the compaction up to the cap: the next checkpoint folds.
  for (let n = 0; n < 200 && engine.stats.checkpointsBesideCompaction < 3; n++) {
    await s.commit(i++);
    await turns(2);
  }
  for (let n = 0; n < 2000 && engine.stats.walObjectsSinceCheckpoint >= 2; n++) await turns(1);
  const foldsBefore = engine.stats.runsFoldedBesideCompaction;
  expect(foldsBefore).toBe(0);
  tampering.tamper = tamper;
  for (let n = 0; n < 200 && tampering.segmentReads === 0; n++) {
    await s.commit(i++);
    await turns(2);
  }
  expect(tampering.segmentReads, "a fold read the runs beside").toBeGreaterThan(0);
  // The fold's checkpoint ends (published or failed); the compaction is still held.
  for (let n = 0; n < 5000 && s.errors.length === 0 && engine.stats.runsFoldedBesideCompaction === foldsBefore; n++) await turns(1);
  expect(engine.stats.compactions, "the compaction is still held").toBe(s.compactionsBefore);
  tampering.tamper = undefined;
  const out = { folds: engine.stats.runsFoldedBesideCompaction - foldsBefore, errors: [...s.errors], segmentReads: tampering.segmentReads };
  if (opts.lost) {
    // A segment really gone holds values paged to it: reading them says so, and so does a reader's open.
    await expect(readAll(engine, [...model.keys()])).rejects.toBeInstanceOf(StoreCorruptedError);
    await expect(EngineReader.open(s.inner, { retry })).rejects.toBeInstanceOf(StoreCorruptedError);
    for (const h of [...gated.held]) gated.release(h.key);
    await engine.close();
    return out;
  }
  await opts.afterFold?.();
  expect(await readAll(engine, [...model.keys()])).toEqual(sorted(model));
  for (const h of [...gated.held]) gated.release(h.key);
  for (let n = 0; n < 5000 && engine.stats.compactions === s.compactionsBefore; n++) await turns(1);
  expect(engine.stats.compactions).toBeGreaterThan(s.compactionsBefore);
  for (let j = 0; j < 4; j++) await s.commit(i++);
  await engine.checkpoint().catch((err: unknown) => s.errors.push(err));
  expect(await readAll(engine, [...model.keys()])).toEqual(sorted(model));
  await engine.close();
  const reader = await EngineReader.open(s.inner, { retry });
  expect(new Map([...reader.scan()].map(([k, v]) => [k, dec(v)!]))).toEqual(model);
  const reopened = await Engine.open(s.inner, s.opts);
  expect(await readAll(reopened, [...model.keys()])).toEqual(sorted(model));
  await reopened.close();
  return out;
}

describe("a fold whose manifest put lands but reports failure", () => {
  for (const paged of [false, true]) {
    it(`the next publish adopts it: the engine, a reader and a reopen see the model${paged ? " (values paged)" : ""}`, async () => {
      const s = await besideCompaction(paged);
      let failed = 0;
      let target: string | undefined;
      await attackFold(s, async (_key, _offset, bytes) => {
        // The fold read its runs: its manifest put is the next one. It lands, then every retry fails unsent.
        s.tampering.putFault ??= (key) => {
          if (!key.startsWith("manifest/") || (target !== undefined && key !== target)) return undefined;
          target = key;
          return failed++ === 0 ? "land" : "fail";
        };
        return bytes;
      });
      expect(failed, "the fold's manifest put landed, then failed on every retry").toBe(retry.attempts);
      expect(s.errors.some((e) => e instanceof StoreUnavailableError)).toBe(true);
    });
  }
});

/**
 * How a read of a run being folded goes wrong. The store has no ranged reads (GatedStore), so each read is
 * of the whole segment; `tailOnly` marks damage to its tail alone (index, filter slot, footer): a fold of a
 * writer with paged values holds every block index, reads only blocks, and publishes whole.
 */
const damages: [string, (s: Setup) => Tamper, "corrupt" | "lost" | "passes", tailOnly?: boolean][] = [
  ["the segment is gone", () => async () => null, "corrupt"],
  ["the segment was deleted from the store", (s) => async (key) => (await s.inner.delete(key), null), "lost"],
  ["the read comes back a byte short", () => async (_k, _o, b) => b?.subarray(0, b.byteLength - 1) ?? null, "corrupt", true],
  ["the read comes back cut to its first 16 bytes (inside the first block)", () => async (_k, _o, b) => b?.subarray(0, 16) ?? null, "corrupt"],
  ["the first byte read is flipped", () => async (_k, _o, b) => flipped(b, 0), "corrupt"],
  ["the last byte read (the footer's checksum) is flipped", () => async (_k, _o, b) => flipped(b, -1), "corrupt", true],
  ["the byte 36 from the end (the footer's version) is flipped", () => async (_k, _o, b) => flipped(b, -12), "corrupt", true],
  [
    "the first two reads fail with a connection reset",
    () => {
      let n = 0;
      return async (_k, _o, b) => {
        if (++n <= 2) throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
        return b;
      };
    },
    "passes",
  ],
];

function flipped(b: Uint8Array | null, at: number): Uint8Array | null {
  if (b === null) return null;
  const c = Uint8Array.from(b);
  c[at < 0 ? c.length + at : at]! ^= 0x10;
  return c;
}

describe("a fold whose runs are damaged or unreachable mid-fold", () => {
  for (const paged of [false, true]) {
    for (const [name, make, damage, tailOnly] of damages) {
      const expected = tailOnly && paged ? "unread" : damage;
      const lost = expected === "lost" && paged;
      const outcome =
        expected === "passes"
          ? "the fold retries and publishes"
          : expected === "unread"
            ? "the fold reads only blocks (the writer holds the index) and publishes"
            : "the fold fails with StoreCorruptedError and publishes nothing";
      const after = lost ? "the values paged to it read as StoreCorruptedError" : "the state stays the model's";
      it(`${name}${paged ? " (values paged)" : ""}: ${outcome}; ${after}`, async () => {
        const s = await besideCompaction(paged);
        const out = await attackFold(s, make(s), { lost });
        if (expected !== "passes" && expected !== "unread") {
          expect(out.folds, "no fold published").toBe(0);
          expect(out.errors.length).toBeGreaterThan(0);
          for (const err of out.errors) expect(err).toBeInstanceOf(StoreCorruptedError);
        } else {
          expect(out.folds).toBeGreaterThan(0);
          expect(out.errors).toEqual([]);
        }
      });
    }
  }
});

describe("a fold whose ranged reads meet injected store faults (withFaults)", () => {
  for (const paged of [false, true]) {
    it(`at a rate past what the retries cover, the fold fails with StoreUnavailableError or publishes whole; the state stays the model's${paged ? " (values paged)" : ""}`, async () => {
      const s = await besideCompaction(paged);
      const out = await attackFold(
        s,
        async (_key, _offset, bytes) => {
          s.faults.failureRate = 0.6;
          return bytes;
        },
        {
          afterFold: async () => {
            s.faults.failureRate = 0;
          },
        },
      );
      expect(s.faults.injected, "faults were injected into the fold's reads").toBeGreaterThan(0);
      for (const err of out.errors) expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(out.folds + out.errors.length).toBeGreaterThan(0);
    });
  }
});

describe("a reader opened during a fold", () => {
  it("refreshes past the fold's publish and the deletion of the runs it folded, and sees the model", async () => {
    const s = await besideCompaction(false);
    let opening: Promise<EngineReader> | undefined;
    await attackFold(
      s,
      async (_key, _offset, bytes) => {
        opening ??= EngineReader.open(s.inner, { retry });
        return bytes;
      },
      {
        afterFold: async () => {
          const reader = await opening!;
          await reader.refresh();
          expect(new Map([...reader.scan()].map(([k, v]) => [k, dec(v)!]))).toEqual(s.model);
          await reader.close();
        },
      },
    );
    expect(opening).toBeDefined();
  });
});

describe("the store reads of a fold", () => {
  for (const paged of [false, true]) {
    const reads = paged ? "one window each: the writer holds every block index" : "its tail (the block index), then one window";
    it(`read each folded segment (of at most one window) ${paged ? "once" : "twice"}: ${reads}${paged ? " (values paged)" : ""}`, async () => {
      const s = await besideCompaction(paged);
      const bySegment = new Map<string, number>();
      const out = await attackFold(s, async (key, _offset, bytes) => {
        bySegment.set(key, (bySegment.get(key) ?? 0) + 1);
        return bytes;
      });
      expect(out.folds, "a fold published").toBeGreaterThan(0);
      expect(out.errors).toEqual([]);
      expect(bySegment.size, "the fold read segments").toBeGreaterThan(0);
      expect([...bySegment.values()]).toEqual([...bySegment.keys()].map(() => (paged ? 1 : 2)));
    });
  }
});
