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
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type EngineOptions, type ObjectStore, type StoredObject, type ListOptions, type ListedObject } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { turns } from "../support/turns.js";
import { CompactionGate, type Hold, holdCompaction, STATE_TUNINGS, StoppingStore, useStateTuning } from "./fixtures/held-compaction.js";

const enc = (s: string) => new TextEncoder().encode(s);
const marker = (i: number) => `x/${String(i).padStart(6, "0")}`;

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
  const gate = new CompactionGate(inner);
  const severed = new StoppingStore(gate);
  const engine = await Engine.open(severed, opts);
  const w = new MarkerWriter(engine);
  const { compaction, compactions } = await holdCompaction(engine, gate, () => w.commit(), {
    hold,
    fill: 12,
    beside,
    batchesBeside: 1,
    segmentBeforeManifest: 2,
    settleTurns: 50,
  });
  for (let t = 0; t < tail; t++) await w.commit();

  if (stateTuning.memtableKeys !== undefined) {
    // The writer's state is in runs, merged as it goes.
    expect(engine.stats.memtableFreezes).toBeGreaterThan(0);
    expect(engine.stats.runMerges).toBeGreaterThan(0);
  }
  const held = gate.held[0]!.key;
  if (end === "finish") {
    gate.release(held);
    await compaction;
    expect(engine.stats.compactions).toBe(compactions + 1);
    await engine.close();
  } else {
    severed.sever();
    if (end === "stop, held put lands late") {
      gate.release(held);
      await gate.landed(held);
    }
  }
  await expectReopened(inner, w, opts);
}

for (const tuning of STATE_TUNINGS) {
  describe(`deletes of the greatest key across a compaction${tuning.name}`, () => {
    // Every state of the process: the writer's (its memtable freezes into runs that merge) and the reopened one's
    // (the runs it loads merge while it reads the rest and replays the WAL, deletes of run entries included).
    useStateTuning(tuning);
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
