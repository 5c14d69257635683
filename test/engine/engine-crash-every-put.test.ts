/**
 * @module A writer stopped for good after each store write of a seeded
 * workload in turn, reopened and checked against a model of its commits.
 * The workload commits batches that put and delete random keys, move a
 * marker that is always the greatest key (put the next, delete the one
 * before) and sometimes delete the greatest of the other keys; it builds
 * runs with incremental checkpoints, then holds a compaction's segment or
 * manifest put while incremental checkpoints publish (and fold) beside it,
 * lets it finish, and checkpoints again, so the store writes counted cover
 * WAL puts, segments, manifests and the deletes of what each manifest made
 * obsolete. For every k, the writer's k-th store write lands and then the
 * store answers nothing more, as a process killed at that point: the
 * reopened state must be the model's after some prefix of the batches,
 * every acknowledged one included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Engine,
  MemoryStore,
  WriteBatch,
  type EngineOptions,
  type ListOptions,
  type ListedObject,
  type ObjectStore,
  type PutOptions,
  type StoredObject,
} from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { GatedStore } from "../support/gated-store.js";
import { traceKeys } from "../support/key-trace.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { seededRandom } from "../../runtime/store/prng.js";
import { testRandom } from "../support/seed.js";
import { turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const marker = (i: number) => `x/${String(i).padStart(4, "0")}`;
const KEYS = 40;
const plainKey = (n: number) => `k/${String(n).padStart(2, "0")}`;

/** How a store write ends the writer: it lands and nothing after it does, or it never lands while later ones still do for a while. */
type Kill = "lands, then nothing" | "lost, later ones land";

/** Turns of the event loop during which writes after a lost one still land (as requests sent before a kill land after it). */
const LATER_LANDING_TURNS = 3;

/**
 * A store that stops answering its writer at its `limit`-th write (put or
 * delete), as a process killed there: with "lands, then nothing" that write
 * lands and its answer, and every later call, never comes; with "lost,
 * later ones land" that write never lands nor answers, later calls go on
 * for `LATER_LANDING_TURNS` turns, and then nothing answers. `limit`
 * undefined counts without stopping.
 */
class StopAfterWrites extends ForwardingStore {
  writes = 0;
  stopped = false;
  readonly #never = new Promise<never>(() => {});
  #onStop: () => void = () => {};
  readonly stop = new Promise<void>((resolve) => {
    this.#onStop = resolve;
  });

  constructor(
    inner: ObjectStore,
    readonly limit: number | undefined,
    readonly kill: Kill = "lands, then nothing",
  ) {
    super(inner);
  }

  #stopNow(): void {
    this.stopped = true;
    this.#onStop();
  }

  async #write<T>(call: () => Promise<T>): Promise<T> {
    if (this.stopped) return this.#never;
    this.writes++;
    if (this.writes !== this.limit) return this.#read(call);
    if (this.kill === "lost, later ones land") {
      turns(LATER_LANDING_TURNS).then(
        () => this.#stopNow(),
        () => {},
      );
      return this.#never;
    }
    this.#stopNow();
    await call();
    return this.#never;
  }

  async #read<T>(call: () => Promise<T>): Promise<T> {
    if (this.stopped) return this.#never;
    const result = await call();
    if (this.stopped) return this.#never;
    return result;
  }

  override put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    return this.#write(() => super.put(key, body, opts));
  }

  override delete(key: string): Promise<void> {
    return this.#write(() => super.delete(key));
  }

  override get(key: string): Promise<StoredObject | null> {
    return this.#read(() => super.get(key));
  }

  override async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    const keys = await this.#read(async () => {
      const got: ListedObject[] = [];
      for await (const o of super.list(prefix, opts)) got.push(o);
      return got;
    });
    yield* keys;
  }
}

type State = ReadonlyMap<string, string>;

/** The workload's batches and the state after each: `states[j]` is the state after the first j batches. */
class ModelWriter {
  readonly states: State[] = [new Map()];
  /** Batches whose commit resolved. */
  acknowledged = 0;
  #state = new Map<string, string>();
  #marker = 0;

  constructor(readonly random: () => number) {}

  /**
   * One batch through `engine`: random puts and deletes (the first batch puts every key), the marker moved, and
   * now and then the greatest other key deleted.
   */
  async commit(engine: Engine): Promise<void> {
    const batch = new WriteBatch();
    const next = new Map(this.#state);
    const n = this.states.length;
    const puts = n === 1 ? KEYS : 1 + Math.floor(this.random() * 3);
    for (let p = 0; p < puts; p++) {
      const key = plainKey(n === 1 ? p : Math.floor(this.random() * KEYS));
      batch.put(key, enc(`${key}@${n}`));
      next.set(key, `${key}@${n}`);
    }
    const present = [...next.keys()].filter((k) => k.startsWith("k/")).sort();
    const deletes = Math.floor(this.random() * 3);
    for (let d = 0; d < deletes && present.length > 0; d++) {
      const key = present.splice(Math.floor(this.random() * present.length), 1)[0]!;
      batch.delete(key);
      next.delete(key);
    }
    if (present.length > 0 && this.random() < 0.3) {
      const greatest = present[present.length - 1]!;
      batch.delete(greatest);
      next.delete(greatest);
    }
    const m = ++this.#marker;
    batch.put(marker(m), enc(String(m)));
    next.set(marker(m), String(m));
    if (m > 1) {
      batch.delete(marker(m - 1));
      next.delete(marker(m - 1));
    }
    this.#state = next;
    this.states.push(next);
    await engine.commit(batch);
    this.acknowledged = n;
  }
}

const opts: EngineOptions = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentRuns: 2,
  maxSegmentBytes: 160,
  segmentBlockBytes: 64,
  flushIntervalMs: 0,
  retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
};

/** Where the compaction is held while checkpoints publish beside it. */
type Hold = "first segment" | "manifest";

interface Variant {
  hold: Hold;
  /** Incremental checkpoints published beside the held compaction (past `maxSegmentRuns`, the later ones fold). */
  beside: number;
}

/** Starts an incremental checkpoint beside the held compaction and waits until it published. */
async function publishBeside(engine: Engine): Promise<void> {
  const before = engine.stats.checkpointsBesideCompaction;
  engine.checkpoint().catch(() => {});
  for (let i = 0; i < 10_000 && engine.stats.checkpointsBesideCompaction === before; i++) await turns(1);
  expect(engine.stats.checkpointsBesideCompaction, "an incremental checkpoint published beside the compaction").toBe(before + 1);
}

/** The workload of the module's comment, over `store`; with `stop` given, what it meets once that store stopped is not checked. */
async function workload(store: ObjectStore, model: ModelWriter, variant: Variant, errors: unknown[]): Promise<void> {
  let armed: "segment" | "manifest" | undefined;
  const gated = new GatedStore(store, (key) => {
    if (armed === undefined || !key.startsWith(armed === "segment" ? "seg/" : "manifest/")) return false;
    armed = undefined;
    return true;
  });
  const engine = await Engine.open(gated, { ...opts, onBackgroundError: (err) => errors.push(err) });
  const commit = () => model.commit(engine);
  // Two runs: the next checkpoint is a compaction.
  for (let i = 0; i < 8; i++) await commit();
  await engine.checkpoint();
  await commit();
  await engine.checkpoint();
  expect(engine.stats.segmentRuns).toBe(2);
  const compactions = engine.stats.compactions;
  armed = "segment";
  await commit();
  const compaction = engine.checkpoint();
  compaction.catch(() => {});
  await gated.waitHeld(1);
  for (let b = 0; b < variant.beside; b++) {
    await commit();
    await commit();
    await publishBeside(engine);
  }
  expect(engine.stats.compactions, "the compaction is still held").toBe(compactions);
  // Past maxSegmentRuns (2) runs beside it, the next one beside it folds the newest of them into its own.
  if (variant.beside >= 3) expect(engine.stats.runsFoldedBesideCompaction).toBeGreaterThan(0);
  if (variant.hold === "manifest") {
    // Its segments all stored, its manifest put held: one more incremental checkpoint waits to publish after it.
    armed = "manifest";
    gated.release(gated.held[0]!.key);
    await gated.waitHeld(1);
    await commit();
    engine.checkpoint().catch(() => {});
    await turns(20);
  }
  await commit();
  gated.release(gated.held[0]!.key);
  await compaction;
  expect(engine.stats.compactions).toBe(compactions + 1);
  // An incremental checkpoint after the compaction (its collection deletes the WAL the compaction covered), then a tail no checkpoint covers.
  await commit();
  await engine.checkpoint();
  await commit();
  await commit();
  await engine.checkpoint();
  await commit();
  await engine.flush();
}

/** The state of a store reopened, then after a checkpoint of the reopened state; throws with the markers' whereabouts when it is none of `allowed`. */
async function expectReopenedWithin(inner: ObjectStore, states: readonly State[], from: number, what: string): Promise<void> {
  let engine: Engine;
  try {
    engine = await Engine.open(inner, opts);
  } catch (err) {
    throw new Error(`${what}: the reopen failed: ${(err as Error).message}`, { cause: err });
  }
  try {
    const read = () => new Map([...engine.scan()].map(([k, v]) => [k, dec(v)]));
    const matches = (got: State) => states.slice(from).some((s) => s.size === got.size && [...s].every(([k, v]) => got.get(k) === v));
    let got = read();
    if (!matches(got)) {
      const want = states[from]!;
      const wrong = [...new Set([...got.keys(), ...want.keys()])].filter((k) => got.get(k) !== want.get(k)).sort();
      const trace = await traceKeys(inner, wrong);
      expect.fail(
        `${what}: the reopened state is none of the states after batches ${from} to ${states.length - 1}; against ${from}: ${wrong
          .map((k) => `${k} ${got.get(k) ?? "absent"} (model ${want.get(k) ?? "absent"})`)
          .join(", ")}\n${trace.join("\n")}`,
      );
    }
    await engine.commit(new WriteBatch().put("z/after", enc("after")));
    await engine.checkpoint();
    got = read();
    got.delete("z/after");
    expect(matches(got), `${what}: the state after a checkpoint of the reopened one`).toBe(true);
  } finally {
    await engine.close();
  }
}

/**
 * The workload stopped after store write `k`, then reopened and checked; false when it ended with fewer writes (the
 * number varies a little from run to run: collections and merges go at their own pace), its end state checked then.
 */
async function stopAfter(seed: number, variant: Variant, kill: Kill, k: number): Promise<boolean> {
  const inner = new MemoryStore();
  const stopping = new StopAfterWrites(inner, k, kill);
  const errors: unknown[] = [];
  const model = new ModelWriter(seededRandom(seed));
  const run = workload(stopping, model, variant, errors);
  // What the workload meets after the stop (a check on a state it no longer sees change) is not this test's.
  const ended = run.then(
    () => {},
    (err: unknown) => {
      if (!stopping.stopped) throw err;
    },
  );
  await Promise.race([ended, stopping.stop]);
  expect(errors, "background failures before the stop").toEqual([]);
  if (!stopping.stopped) {
    await expectReopenedWithin(inner, model.states, model.states.length - 1, `the whole workload (${stopping.writes} store writes)`);
    return false;
  }
  // Let the writer go on as far as it can: it hears nothing more, but calls already answered finish their turns.
  await turns(5);
  await expectReopenedWithin(inner, model.states, model.acknowledged, `stopped at store write ${k} (${kill})`);
  return true;
}

const TUNINGS = [
  { name: "", memtableKeys: undefined, idleSlice: undefined },
  { name: " (state in runs of 4 keys, merged 2 entries per idle turn)", memtableKeys: 4, idleSlice: 2 },
] as const;

const KILLS: Kill[] = ["lands, then nothing", "lost, later ones land"];

const VARIANTS: Variant[] = [
  { hold: "first segment", beside: 1 },
  { hold: "first segment", beside: 4 },
  { hold: "manifest", beside: 1 },
  { hold: "manifest", beside: 4 },
];

for (const tuning of TUNINGS) {
  describe(`a writer stopped after every store write of a compaction's workload${tuning.name}`, () => {
    beforeAll(() => {
      stateTuning.memtableKeys = tuning.memtableKeys;
      stateTuning.idleSlice = tuning.idleSlice;
    });
    afterAll(() => {
      stateTuning.memtableKeys = undefined;
      stateTuning.idleSlice = undefined;
    });
    for (const variant of VARIANTS) {
      for (const kill of KILLS) {
        it(
          `held at its ${variant.hold}, ${variant.beside} checkpoint(s) beside it; the write ${kill}`,
          async () => {
            const seed = testRandom(`${variant.hold} ${variant.beside} ${kill}${tuning.name}`).seed;
            let k = 1;
            while (await stopAfter(seed, variant, kill, k)) k++;
            // Past the compaction, its collection and the checkpoints after it.
            expect(k).toBeGreaterThan(60);
          },
          HEAVY_TEST_MS,
        );
      }
    }
  });
}
