/**
 * @module Backpressure: once the WAL since the last checkpoint reaches
 * `checkpointBacklog` times a checkpoint trigger, commits are stored at once
 * but acknowledged only when a checkpoint brings it back under. Checked
 * against held and failing segment puts, close, fencing, and the backoff of
 * a failed checkpoint on a MockClock.
 */
import { describe, expect, it, vi } from "vitest";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { ClosedError, Engine, FencedError, MemoryStore, MockClock, ValidationError, WriteBatch, type EngineOptions, type ObjectStore } from "taquba";
import { InjectedFaultError } from "taquba/testing";
import { failWhen } from "../support/failing-store.js";
import { GatedStore } from "../support/gated-store.js";
import { settlesWithinTurns, turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const retry = { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 };
/** A checkpoint every 2 WAL objects; commits wait from 4 objects behind. */
const paced: EngineOptions = { checkpointWalObjects: 2, checkpointWalBytes: 0, checkpointBacklog: 2, retry };
const isSegment = (key: string) => key.startsWith("seg/");

/** Tracks whether a promise settled, without awaiting it. */
function watch(p: Promise<void>): { readonly settled: boolean; readonly error: unknown } {
  const state = { settled: false, error: undefined as unknown };
  p.then(
    () => {
      state.settled = true;
    },
    (err: unknown) => {
      state.settled = true;
      state.error = err;
    },
  );
  return state;
}

/**
 * Lets every held put go: a compaction's held segment put, and the one of
 * the incremental checkpoint that started beside it (docs/engine.md,
 * "Incremental checkpoints during a compaction").
 */
function releaseAll(store: GatedStore): void {
  for (const h of [...store.held]) store.release(h.key);
}

/** One commit per WAL object: each awaited before the next is made. */
async function commitEach(engine: Engine, keys: string[]): Promise<void> {
  for (const k of keys) await engine.commit(new WriteBatch().put(k, enc(k)));
}

/** A gated store whose deletes of WAL objects hang until `releaseDeletes()`: a checkpoint's garbage collection that does not end. */
class HeldDeletes extends GatedStore {
  deletesHeld = 0;
  #holding = true;
  #waiting: Array<() => void> = [];
  #started!: () => void;
  /** Resolves when the first delete is held. */
  readonly deleteStarted = new Promise<void>((r) => {
    this.#started = r;
  });

  override async delete(key: string): Promise<void> {
    if (this.#holding && key.startsWith("wal/")) {
      this.deletesHeld++;
      this.#started();
      await new Promise<void>((r) => this.#waiting.push(r));
    }
    return super.delete(key);
  }

  releaseDeletes(): void {
    this.#holding = false;
    for (const r of this.#waiting.splice(0)) r();
  }
}

describe("engine backpressure (checkpointBacklog)", () => {
  it("refuses a backlog below 1 (other than 0), NaN, negative or infinite, before any IO", async () => {
    for (const bad of [Number.NaN, -1, 0.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, "2" as unknown as number]) {
      const store = new MemoryStore();
      const err = await Engine.open(store, { checkpointBacklog: bad }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).message).toMatch(/checkpointBacklog must be 0 \(off\) or a finite number >= 1/);
      const written: string[] = [];
      for await (const o of store.list("")) written.push(o.key);
      expect(written).toEqual([]);
    }
    for (const ok of [0, 1, 1.5, 1e9]) await (await Engine.open(new MemoryStore(), { checkpointBacklog: ok })).close();
  });

  it("refuses a clock that is no clock or reads no time, before any IO", async () => {
    for (const clock of [5, null, { now: () => Number.NaN }, { now: () => -1 }, { now: () => Number.POSITIVE_INFINITY }]) {
      const store = new MemoryStore();
      const err = await Engine.open(store, { clock: clock as unknown as MockClock }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).message).toMatch(/clock/);
      const written: string[] = [];
      for await (const o of store.list("")) written.push(o.key);
      expect(written).toEqual([]);
    }
  });

  it("a commit made once checkpoints fall behind is applied and stored at once, and acknowledged when the checkpoint lands", async () => {
    const store = new GatedStore(new MemoryStore(), isSegment);
    const engine = await Engine.open(store, paced);
    // Two objects start a checkpoint, whose segment put is held; two more fill the backlog.
    await commitEach(engine, ["a/1", "a/2", "a/3", "a/4"]);
    await store.waitHeld(1);
    const durableBefore = engine.stats.durableSeq;
    const waiting = watch(engine.commit(new WriteBatch().put("a/5", enc("a/5"))));
    await engine.flush();
    await turns();
    expect(engine.get("a/5")).toEqual(enc("a/5"));
    expect(engine.stats.durableSeq).toBe(durableBefore + 1);
    expect(waiting.settled).toBe(false);
    // A commit that does not wait for durability is not held either.
    await engine.commit(new WriteBatch().put("a/6", enc("a/6")), { durable: false });

    store.hold = () => false;
    releaseAll(store);
    await engine.flush();
    for (let i = 0; i < 5000 && !waiting.settled; i++) await turns(1);
    expect(waiting).toMatchObject({ settled: true, error: undefined });
    expect(engine.stats.checkpoints).toBeGreaterThanOrEqual(1);
    await engine.close();
    const reopened = await Engine.open(store.inner);
    expect([...reopened.scan({ prefix: "a/" })].map(([k]) => k)).toEqual(["a/1", "a/2", "a/3", "a/4", "a/5", "a/6"]);
    await reopened.close();
  });

  it("commits held by a checkpoint go once it published, with or without paging, while its deletes of what it replaced still hang", async () => {
    for (const extra of [{}, { pageValues: { keyPrefixes: ["a/"], minBytes: 1 } }] as EngineOptions[]) {
      const store = new HeldDeletes(new MemoryStore(), isSegment);
      const engine = await Engine.open(store, { ...paced, ...extra });
      await commitEach(engine, ["a/1", "a/2", "a/3", "a/4"]);
      await store.waitHeld(1);
      const waiting = watch(engine.commit(new WriteBatch().put("a/5", enc("a/5"))));
      await engine.flush();
      await turns();
      expect(waiting.settled).toBe(false);
      // The segment lands, the manifest is published; the deletes of the covered WAL hang.
      store.hold = () => false;
      store.release(store.held[0]!.key);
      await store.deleteStarted;
      for (let i = 0; i < 5000 && !waiting.settled; i++) await turns(1);
      expect(waiting).toMatchObject({ settled: true, error: undefined });
      expect(store.deletesHeld).toBeGreaterThan(0);
      expect(engine.stats.checkpoints).toBe(1);
      expect(engine.stats.walObjectsSinceCheckpoint).toBeLessThan(4);
      store.releaseDeletes();
      // The incremental checkpoint that started beside the compaction is still held at its segment put.
      releaseAll(store);
      await engine.close();
      const reopened = await Engine.open(store.inner);
      expect([...reopened.scan({ prefix: "a/" })].map(([k]) => k)).toEqual(["a/1", "a/2", "a/3", "a/4", "a/5"]);
      await reopened.close();
    }
  });

  it("0 turns it off: commits are acknowledged however far checkpoints fall behind", async () => {
    const store = new GatedStore(new MemoryStore(), isSegment);
    const engine = await Engine.open(store, { ...paced, checkpointBacklog: 0 });
    await commitEach(
      engine,
      Array.from({ length: 12 }, (_, i) => `b/${i}`),
    );
    // The first checkpoint (a compaction) and the incremental one that started beside it, both held.
    expect(store.held.length).toBe(2);
    expect(engine.stats.walObjectsSinceCheckpoint).toBe(12);
    store.hold = () => false;
    releaseAll(store);
    await engine.close();
  });

  it("a checkpoint that fails releases the commits waiting for it; while paused after it commits are not held; the next attempt holds again (MockClock)", async () => {
    let failing = true;
    const inner = new MemoryStore();
    const faulty = failWhen(inner, (call, key) => (failing && call === "put" && isSegment(key) ? new InjectedFaultError("put", key, false) : undefined));
    const store = new GatedStore(faulty, isSegment);
    const clock = new MockClock();
    const failures: unknown[] = [];
    const engine = await Engine.open(store, { ...paced, clock, onBackgroundError: (err) => failures.push(err) });

    // A checkpoint held at its segment put, the backlog full: the next commit waits.
    await commitEach(engine, ["c/1", "c/2", "c/3", "c/4"]);
    await store.waitHeld(1);
    const waiting = watch(engine.commit(new WriteBatch().put("c/5", enc("c/5"))));
    await engine.flush();
    await turns();
    expect(waiting.settled).toBe(false);
    // The held put goes on and fails, and so does its retry: the checkpoint fails and lets the commit go.
    store.hold = () => false;
    releaseAll(store);
    for (let i = 0; i < 5000 && !waiting.settled; i++) await turns(1);
    expect(waiting).toMatchObject({ settled: true, error: undefined });
    // The compaction and the incremental checkpoint that started beside it both fail; one pause for both.
    for (let i = 0; i < 5000 && failures.length < 2; i++) await turns(1);
    expect(failures.length).toBe(2);
    for (const f of failures) expect(String(f)).toMatch(/injected fault: put of "seg\//);
    const waitsSoFar = engine.stats.backlogWaits;
    expect(waitsSoFar).toBe(1);

    // Paused for 1 s of the clock: no attempt, and commits are acknowledged as soon as they are stored.
    await commitEach(engine, ["c/6", "c/7"]);
    clock.advance(999);
    await commitEach(engine, ["c/8"]);
    expect(engine.stats.backlogWaits).toBe(waitsSoFar);
    expect(failures.length).toBe(2);
    expect(engine.stats.walObjectsSinceCheckpoint).toBe(8);

    // The pause ends: the next commit starts an attempt (held again) and waits for it.
    failing = false;
    store.hold = isSegment;
    clock.advance(1);
    const next = watch(engine.commit(new WriteBatch().put("c/9", enc("c/9"))));
    await store.waitHeld(1);
    await turns();
    expect(next.settled).toBe(false);
    store.hold = () => false;
    releaseAll(store);
    for (let i = 0; i < 5000 && !next.settled; i++) await turns(1);
    expect(next).toMatchObject({ settled: true, error: undefined });
    expect(engine.stats.checkpoints).toBeGreaterThanOrEqual(1);
    expect(failures.length).toBe(2);
    await engine.close();
    const reopened = await Engine.open(inner);
    expect([...reopened.scan({ prefix: "c/" })].length).toBe(9);
    await reopened.close();
  });

  it("a clock set back during the pause after a failed checkpoint does not stretch the pause by the jump (MockClock)", async () => {
    let failing = true;
    const inner = new MemoryStore();
    const store = failWhen(inner, (call, key) => (failing && call === "put" && isSegment(key) ? new InjectedFaultError("put", key, false) : undefined));
    const clock = new MockClock(10_000_000);
    const failures: unknown[] = [];
    const engine = await Engine.open(store, { ...paced, clock, onBackgroundError: (err) => failures.push(err) });
    await commitEach(engine, ["s/1", "s/2"]);
    for (let i = 0; i < 5000 && failures.length === 0; i++) await turns(1);
    expect(failures.length).toBe(1);
    failing = false;
    // Paused for 1 s from 10_000_000; the clock is then set back an hour (a VM resumed, a stepped system clock).
    clock.set(10_000_000 - 3_600_000);
    await commitEach(engine, ["s/3", "s/4"]);
    await turns();
    expect(engine.stats.checkpoints, "still paused: the pause counts again from the time the clock went back to").toBe(0);
    clock.advance(1000);
    await commitEach(engine, ["s/5"]);
    for (let i = 0; i < 5000 && engine.stats.checkpoints === 0; i++) await turns(1);
    expect(engine.stats.checkpoints, "automatic checkpoints resume once the pause's own length passed, not an hour later").toBeGreaterThanOrEqual(1);
    expect(failures.length).toBe(1);
    await engine.close();
  });

  it("close while commits wait: they resolve (they are stored), close ends, and a reopen has them", async () => {
    const store = new GatedStore(new MemoryStore(), isSegment);
    const engine = await Engine.open(store, paced);
    await commitEach(engine, ["d/1", "d/2", "d/3", "d/4"]);
    await store.waitHeld(1);
    const waiting = [watch(engine.commit(new WriteBatch().put("d/5", enc("d/5")))), watch(engine.commit(new WriteBatch().put("d/6", enc("d/6"))))];
    await engine.flush();
    await turns();
    expect(waiting.map((w) => w.settled)).toEqual([false, false]);
    const closed = watch(engine.close());
    await turns();
    expect(waiting).toEqual([
      { settled: true, error: undefined },
      { settled: true, error: undefined },
    ]);
    // Close waits for the held checkpoint, which stops before publishing once released.
    store.hold = () => false;
    releaseAll(store);
    for (let i = 0; i < 5000 && !closed.settled; i++) await turns(1);
    expect(closed).toMatchObject({ settled: true, error: undefined });
    const reopened = await Engine.open(store.inner);
    expect([...reopened.scan({ prefix: "d/" })].map(([k]) => k)).toEqual(["d/1", "d/2", "d/3", "d/4", "d/5", "d/6"]);
    await reopened.close();
  });

  it("a fenced writer: commits waiting resolve (stored before the fence), later ones reject with FencedError", async () => {
    const inner = new MemoryStore();
    const store = new GatedStore(inner, isSegment);
    const engine = await Engine.open(store, paced);
    await commitEach(engine, ["e/1", "e/2", "e/3", "e/4"]);
    await store.waitHeld(1);
    const waiting = watch(engine.commit(new WriteBatch().put("e/5", enc("e/5"))));
    await engine.flush();
    await turns();
    expect(waiting.settled).toBe(false);

    const newer = await Engine.open(inner);
    expect(newer.get("e/5")).toEqual(enc("e/5"));
    // The held checkpoint goes on and meets the newer writer's manifest: fenced.
    store.hold = () => false;
    releaseAll(store);
    for (let i = 0; i < 5000 && !waiting.settled; i++) await turns(1);
    expect(waiting).toMatchObject({ settled: true, error: undefined });
    expect(engine.failure).toBeInstanceOf(FencedError);
    await expect(engine.commit(new WriteBatch().put("e/6", enc("e/6")))).rejects.toBeInstanceOf(FencedError);
    await engine.close();
    await newer.close();
  });

  it("a writer that keeps committing stays within the bound: the WAL since the last checkpoint never passes it by more than the puts in flight", async () => {
    const inner = new MemoryStore();
    // Segment puts slower than WAL puts: without backpressure the WAL runs far ahead of checkpoints.
    const slowSegments: ObjectStore = {
      get: (k) => inner.get(k),
      put: async (k, b, o) => {
        if (isSegment(k)) await new Promise((r) => setTimeout(r, 20));
        return inner.put(k, b, o);
      },
      delete: (k) => inner.delete(k),
      list: (p, o) => inner.list(p, o),
    };
    const engine = await Engine.open(slowSegments, { ...paced, maxInflightWalPuts: 4 });
    let most = 0;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 60; i++) {
        await engine.commit(new WriteBatch().put(`f/${w}/${String(i).padStart(3, "0")}`, enc("v")));
        most = Math.max(most, engine.stats.walObjectsSinceCheckpoint);
      }
    });
    await Promise.all(writers);
    // 4 objects of backlog, plus at most one commit per writer landing while they wait.
    expect(most).toBeLessThanOrEqual(4 + 4);
    expect(engine.stats.checkpoints).toBeGreaterThan(5);
    await engine.close();
    const reopened = await Engine.open(inner);
    expect([...reopened.scan({ prefix: "f/" })].length).toBe(240);
    await reopened.close();
  });
});

describe("engine backpressure and the garbage collection of a checkpoint", () => {
  it("commits waiting for a checkpoint go once it published, not after its deletes of the WAL it covers (held here)", async () => {
    const inner = new MemoryStore();
    const heldDeletes: Array<() => void> = [];
    let holdDeletes = false;
    const store: ObjectStore = {
      get: (k) => inner.get(k),
      put: (k, b, o) => inner.put(k, b, o),
      delete: async (k) => {
        if (holdDeletes) await new Promise<void>((r) => heldDeletes.push(r));
        return inner.delete(k);
      },
      list: (p, o) => inner.list(p, o),
    };
    const gated = new GatedStore(store, isSegment);
    const engine = await Engine.open(gated, paced);
    // Held from here: the open's own clean-up is not what this test is about.
    holdDeletes = true;
    await commitEach(engine, ["h/1", "h/2", "h/3", "h/4"]);
    await gated.waitHeld(1);
    const waiting = watch(engine.commit(new WriteBatch().put("h/5", enc("h/5"))));
    await engine.flush();
    await turns();
    expect(waiting.settled).toBe(false);
    // The checkpoint writes its segment and publishes; its deletes of the covered WAL objects hang.
    // The incremental checkpoint that started beside the compaction is let go too: both publish, both deletes hang.
    gated.hold = () => false;
    releaseAll(gated);
    for (let i = 0; i < 5000 && (heldDeletes.length === 0 || engine.stats.checkpoints < 2); i++) await turns(1);
    expect(heldDeletes.length).toBeGreaterThan(0);
    // Both published (and a third may have, its deletes waiting behind theirs).
    expect(engine.stats.checkpoints).toBeGreaterThanOrEqual(2);
    expect(engine.stats.walObjectsSinceCheckpoint).toBeLessThan(4);
    for (let i = 0; i < 200 && !waiting.settled; i++) await turns(1);
    expect(waiting, "the WAL is back under the bound once the manifest is published").toMatchObject({ settled: true, error: undefined });
    // Commits made while those deletes hang are not held for them: the deletes run after each checkpoint,
    // so the next ones start at the trigger meanwhile and keep the WAL under the bound.
    const later: ReturnType<typeof watch>[] = [];
    for (const k of ["h/6", "h/7", "h/8", "h/9", "h/10", "h/11"]) {
      // One at a time, each in a WAL object of its own, so the bound is passed again.
      const w = watch(engine.commit(new WriteBatch().put(k, enc(k))));
      later.push(w);
      for (let i = 0; i < 500 && !w.settled; i++) await turns(1);
    }
    expect(engine.stats.walObjectsSinceCheckpoint).toBeLessThan(4);
    expect(engine.stats.checkpoints).toBeGreaterThan(2);
    expect(heldDeletes.length, "the deletes still hang").toBeGreaterThan(0);
    for (const w of later) expect(w, "a commit made while a published checkpoint's deletes hang").toMatchObject({ settled: true, error: undefined });
    holdDeletes = false;
    for (const release of heldDeletes.splice(0)) release();
    await engine.close();
    const reopened = await Engine.open(inner);
    expect([...reopened.scan({ prefix: "h/" })].length).toBe(11);
    await reopened.close();
  });
});

/**
 * Counts the waits a store retry loop starts between attempts (each a timer set from
 * runtime/store/retry.ts), so a test waits for the loop to be waiting, not for a spell of time.
 */
function watchRetryWaits(): { readonly count: number; stop(): void } {
  const original = globalThis.setTimeout;
  let count = 0;
  const spy = vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
    if (/[/\\]store[/\\]retry\.(ts|js)/.test(new Error().stack ?? "")) count++;
    return original(fn, ms);
  }) as typeof setTimeout);
  return {
    get count() {
      return count;
    },
    stop: () => spy.mockRestore(),
  };
}

describe("engine close and a checkpoint waiting out a retry backoff", () => {
  it("close does not wait out the backoff of a failing checkpoint's store call (a minute here): the checkpoint stops at once", async () => {
    const inner = new MemoryStore();
    let attempts = 0;
    const store = failWhen(inner, (call, key) => {
      if (call !== "put" || !isSegment(key)) return undefined;
      attempts++;
      return new InjectedFaultError("put", key, false);
    });
    const engine = await Engine.open(store, {
      ...paced,
      retry: { attempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 },
      onBackgroundError: () => undefined,
    });
    const waits = watchRetryWaits();
    try {
      await commitEach(engine, ["r/1", "r/2"]);
      // The failure reached the retry loop: the checkpoint now waits 30 to 60 s (real timers) before its second attempt.
      for (let i = 0; i < 5000 && waits.count === 0; i++) await turns(1);
      expect(waits.count, "the retry loop waiting").toBeGreaterThan(0);
    } finally {
      waits.stop();
    }
    expect(attempts).toBe(1);
    // The loop asks whether to stop every 50 ms of its wait: close ends within a few of those, long before the
    // 30 s the wait lasts (turns, not wall time: a loaded machine stretches both alike).
    const closed = engine.close();
    expect(await settlesWithinTurns(closed, 100_000), "close ends without waiting for the retry").toBe(true);
    await closed;
    expect(attempts).toBe(1);
    const reopened = await Engine.open(inner);
    expect([...reopened.scan({ prefix: "r/" })].length).toBe(2);
    await reopened.close();
  });

  it("a checkpoint() that close stopped between attempts rejects with ClosedError (cause: the store fault), not as if the store were unavailable", async () => {
    const store = failWhen(new MemoryStore(), (call, key) => (call === "put" && isSegment(key) ? new InjectedFaultError("put", key, false) : undefined));
    const engine = await Engine.open(store, {
      checkpointWalObjects: 0,
      retry: { attempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 },
      onBackgroundError: () => undefined,
    });
    await engine.commit(new WriteBatch().put("r/1", enc("r/1")));
    const waits = watchRetryWaits();
    let checkpoint: Promise<unknown>;
    try {
      checkpoint = engine.checkpoint().then(
        () => undefined,
        (err: unknown) => err,
      );
      // The first put failed and the retry loop started its 30 to 60 s wait.
      for (let i = 0; i < 5000 && waits.count === 0; i++) await turns(1);
      expect(waits.count, "the retry loop waiting").toBeGreaterThan(0);
    } finally {
      waits.stop();
    }
    await engine.close();
    const err = await checkpoint;
    expect(err).toBeInstanceOf(ClosedError);
    expect((err as ClosedError).cause).toBeInstanceOf(InjectedFaultError);
  });
});

describe("engine close stops the in-memory merges", () => {
  it("close stops the engine state's idle merges: a merge in progress then copies nothing more in idle turns", async () => {
    const disposed: LayeredState[] = [];
    const original = LayeredState.prototype.stopIdleMerges;
    LayeredState.prototype.stopIdleMerges = function (this: LayeredState) {
      disposed.push(this);
      original.call(this);
    };
    try {
      const engine = await Engine.open(new MemoryStore());
      await engine.commit(new WriteBatch().put("g/1", enc("v")));
      await engine.close();
      expect(disposed.length).toBe(1);
      // Four memtables' worth of keys leave the last freeze's copy into its run (and the merge it starts) to idle
      // turns, as one in progress at close would be.
      const state = disposed[0]!;
      for (let i = 0; i < 4 * 32_768; i++) state.set(`g/${String(i).padStart(6, "0")}`, i);
      const pending = (): number => state.layout.frozen + state.layout.merging;
      expect(pending()).toBeGreaterThan(0);
      const before = { counters: { ...state.counters }, layout: state.layout };
      await turns(50);
      expect({ counters: state.counters, layout: state.layout }).toEqual(before);
      expect(pending()).toBeGreaterThan(0);
    } finally {
      LayeredState.prototype.stopIdleMerges = original;
    }
  });
});
