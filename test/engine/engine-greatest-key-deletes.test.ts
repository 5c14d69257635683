/**
 * @module Deletes of the state's greatest key across a compaction, a crash
 * and a reopen: each batch moves a marker that sorts past every other key
 * (puts the next, deletes the one before), so every checkpoint's run ends
 * with a marker the next batch deletes, and that delete reaches the store
 * only as a tombstone in a later run (an incremental checkpoint beside the
 * compaction, a fold of such runs, or the WAL). The compaction's puts are
 * held at a chosen point (a segment, or its manifest), incremental
 * checkpoints publish beside it, and the writer then either finishes or
 * stops for good with some puts never landing or landing after it stopped
 * (as a process killed with requests in flight). A reopen must hold exactly
 * one marker, the newest, and every other key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Engine,
  MemoryStore,
  WriteBatch,
  type EngineOptions,
  type ObjectStore,
  type PutOptions,
  type StoredObject,
  type ListOptions,
  type ListedObject,
} from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { GatedStore } from "../support/gated-store.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const marker = (i: number) => `x/${String(i).padStart(6, "0")}`;

/**
 * A store whose writer stops for good at `sever()`, as a killed process:
 * every later call, and the answer of every call still in flight, never
 * comes (what a call in flight does to the store beneath still happens).
 */
class SeveredStore extends ForwardingStore {
  #severed = false;
  readonly #never = new Promise<never>(() => {});

  sever(): void {
    this.#severed = true;
  }

  async #call<T>(call: () => Promise<T>): Promise<T> {
    if (this.#severed) return this.#never;
    const result = await call();
    if (this.#severed) return this.#never;
    return result;
  }

  override put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    return this.#call(() => super.put(key, body, opts));
  }

  override get(key: string): Promise<StoredObject | null> {
    return this.#call(() => super.get(key));
  }

  override delete(key: string): Promise<void> {
    return this.#call(() => super.delete(key));
  }

  override async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    const keys = await this.#call(async () => {
      const got: ListedObject[] = [];
      for await (const o of super.list(prefix, opts)) got.push(o);
      return got;
    });
    yield* keys;
  }
}

/**
 * A store whose reads each take a turn of the event loop, as a remote
 * store's do: the reopened state's merges of the runs it loaded then go on
 * in idle turns while the open reads the rest and replays the WAL.
 */
class TurnPerRead extends ForwardingStore {
  override async get(key: string): Promise<StoredObject | null> {
    await turns(1);
    return super.get(key);
  }

  override async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    await turns(1);
    yield* super.list(prefix, opts);
  }
}

/** Keys besides the markers, which all sort before them. */
const FILLER_PER_BATCH = 3;

/** The engine's writes and what they must leave: the filler keys, and the one marker last put. */
class MarkerWriter {
  next = 1;
  readonly filler: string[] = [];

  constructor(readonly engine: Engine) {}

  /** One batch: filler keys, the next marker, and the delete of the one before (the greatest key until now). */
  commit(): Promise<void> {
    const i = this.next++;
    const batch = new WriteBatch();
    for (let f = 0; f < FILLER_PER_BATCH; f++) {
      const key = `a/${String(i).padStart(6, "0")}/${f}`;
      batch.put(key, enc(`filler ${i}`));
      this.filler.push(key);
    }
    batch.put(marker(i), enc(String(i)));
    if (i > 1) batch.delete(marker(i - 1));
    return this.engine.commit(batch);
  }

  get newest(): string {
    return marker(this.next - 1);
  }
}

/** Checks a store reopened after `w` wrote to it: one marker, the newest, and every filler key. */
async function expectReopened(inner: ObjectStore, w: MarkerWriter, opts: EngineOptions): Promise<void> {
  const store = new TurnPerRead(inner);
  const engine = await Engine.open(store, opts);
  try {
    expect([...engine.keys({ prefix: "x/" })], "markers after the reopen (a stale one is a lost delete)").toEqual([w.newest]);
    const filler = new Set(engine.keys({ prefix: "a/" }));
    for (const key of w.filler) expect(filler.has(key), `filler key ${key}`).toBe(true);
    // And a compaction of the reopened state keeps it so.
    await engine.commit(new WriteBatch().put("z/after", enc("after")));
    await engine.checkpoint();
    await engine.checkpoint();
    expect([...engine.keys({ prefix: "x/" })]).toEqual([w.newest]);
  } finally {
    await engine.close();
  }
  const again = await Engine.open(store, opts);
  try {
    expect([...again.keys({ prefix: "x/" })], "markers after a second reopen").toEqual([w.newest]);
  } finally {
    await again.close();
  }
}

const opts: EngineOptions = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentRuns: 2,
  maxSegmentBytes: 256,
  segmentBlockBytes: 64,
  flushIntervalMs: 1,
  retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
};

/**
 * Starts an incremental checkpoint beside the held compaction and waits
 * until it published (its `checkpoint()` call resolves only once the
 * compaction, cut before it, ended too).
 */
async function publishBeside(engine: Engine): Promise<void> {
  const before = engine.stats.checkpointsBesideCompaction;
  engine.checkpoint().catch(() => {});
  for (let i = 0; i < 10_000 && engine.stats.checkpointsBesideCompaction === before; i++) await turns(1);
  expect(engine.stats.checkpointsBesideCompaction, "an incremental checkpoint published beside the compaction").toBe(before + 1);
}

/** Where the compaction is held. */
type Hold = "first segment" | "second segment" | "manifest";
/** How the writer ends: finishing, or stopping with the held put never landing or landing after it stopped. */
type End = "finish" | "stop, held put lost" | "stop, held put lands late";

/**
 * Fills until the next checkpoint is a compaction, holds its put at `hold`,
 * publishes `beside` incremental checkpoints next to it (each after a batch
 * that deletes the greatest key), commits `tail` batches no checkpoint
 * covers, and ends as `end` says.
 */
async function run(hold: Hold, end: End, beside: number, tail: number): Promise<void> {
  const inner = new MemoryStore();
  let armed: Hold | undefined;
  let segmentPuts = 0;
  const gated = new GatedStore(inner, (key) => {
    if (armed === undefined) return false;
    if (armed === "manifest") {
      if (!key.startsWith("manifest/")) return false;
    } else if (!key.startsWith("seg/") || ++segmentPuts < (armed === "first segment" ? 1 : 2)) return false;
    armed = undefined;
    return true;
  });
  const severed = new SeveredStore(gated);
  const engine = await Engine.open(severed, opts);
  const w = new MarkerWriter(engine);
  // Two runs: the next checkpoint is a compaction.
  for (let i = 0; i < 12; i++) await w.commit();
  await engine.checkpoint();
  await w.commit();
  await engine.checkpoint();
  expect(engine.stats.segmentRuns).toBe(2);
  const compactions = engine.stats.compactions;

  armed = hold === "manifest" ? "second segment" : hold;
  await w.commit();
  const compaction = engine.checkpoint();
  compaction.catch(() => {});
  await gated.waitHeld(1);
  const besideBefore = engine.stats.checkpointsBesideCompaction;
  for (let b = 0; b < beside; b++) {
    await w.commit();
    await publishBeside(engine);
  }
  expect(engine.stats.checkpointsBesideCompaction - besideBefore).toBe(beside);
  // At maxSegmentRuns (2) runs beside it, the next one beside it folds the newest of them into its own.
  if (beside >= 3) expect(engine.stats.runsFoldedBesideCompaction).toBeGreaterThan(0);
  expect(engine.stats.compactions, "the compaction is still held").toBe(compactions);
  if (hold === "manifest") {
    // Its segments all stored, its manifest put held: one more incremental checkpoint waits to publish after it.
    armed = "manifest";
    gated.release(gated.held[0]!.key);
    await gated.waitHeld(1);
    await w.commit();
    const waiting = engine.checkpoint();
    waiting.catch(() => {});
    await turns(50);
  }
  for (let t = 0; t < tail; t++) await w.commit();

  if (stateTuning.memtableKeys !== undefined) {
    // The writer's state is in runs, merged as it goes.
    expect(engine.stats.memtableFreezes).toBeGreaterThan(0);
    expect(engine.stats.runMerges).toBeGreaterThan(0);
  }
  const held = gated.held[0]!.key;
  if (end === "finish") {
    gated.release(held);
    await compaction;
    expect(engine.stats.compactions).toBe(compactions + 1);
    await engine.close();
  } else {
    severed.sever();
    if (end === "stop, held put lands late") {
      gated.release(held);
      await gated.landed(held);
    }
  }
  await expectReopened(inner, w, opts);
}

/** The state as sized by default (the writer's fits its memtable), or in small runs that merge a few entries per idle turn. */
const TUNINGS = [
  { name: "", memtableKeys: undefined, idleSlice: undefined },
  { name: " (state in runs of 4 keys, merged 2 entries per idle turn)", memtableKeys: 4, idleSlice: 2 },
] as const;

for (const tuning of TUNINGS) {
  describe(`deletes of the greatest key across a compaction${tuning.name}`, () => {
    // Every state of the process: the writer's (its memtable freezes into runs that merge) and the reopened one's
    // (the runs it loads merge while it reads the rest and replays the WAL, deletes of run entries included).
    beforeAll(() => {
      stateTuning.memtableKeys = tuning.memtableKeys;
      stateTuning.idleSlice = tuning.idleSlice;
    });
    afterAll(() => {
      stateTuning.memtableKeys = undefined;
      stateTuning.idleSlice = undefined;
    });
    for (const hold of ["first segment", "second segment", "manifest"] as const) {
      for (const end of ["finish", "stop, held put lost", "stop, held put lands late"] as const) {
        it(`hold at its ${hold}, ${end}`, async () => {
          // No run beside it; one; two (at maxSegmentRuns); five (folded beside it).
          for (const beside of [0, 1, 2, 5]) {
            for (const tail of [0, 2]) await run(hold, end, beside, tail);
          }
        });
      }
    }
  });
}
