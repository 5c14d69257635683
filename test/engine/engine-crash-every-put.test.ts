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
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type EngineOptions, type ObjectStore } from "taquba";
import { traceKeys } from "../support/key-trace.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { seededRandom } from "../../runtime/store/prng.js";
import { testRandom } from "../support/seed.js";
import { turns } from "../support/turns.js";
import { CompactionGate, type Hold, holdCompaction, type Kill, STATE_TUNINGS, StoppingStore, useStateTuning } from "./fixtures/held-compaction.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const marker = (i: number) => `x/${String(i).padStart(4, "0")}`;
const KEYS = 40;
const plainKey = (n: number) => `k/${String(n).padStart(2, "0")}`;

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

interface Variant {
  /** Where the compaction is held while checkpoints publish beside it. */
  hold: Exclude<Hold, "second segment">;
  /** Incremental checkpoints published beside the held compaction (past `maxSegmentRuns`, the later ones fold). */
  beside: number;
}

/** The workload of the module's comment, over `store`; with `stop` given, what it meets once that store stopped is not checked. */
async function workload(store: ObjectStore, model: ModelWriter, variant: Variant, errors: unknown[]): Promise<void> {
  const gate = new CompactionGate(store);
  const engine = await Engine.open(gate, { ...opts, onBackgroundError: (err) => errors.push(err) });
  const commit = () => model.commit(engine);
  const { compaction, compactions } = await holdCompaction(engine, gate, commit, {
    hold: variant.hold,
    fill: 8,
    beside: variant.beside,
    batchesBeside: 2,
    segmentBeforeManifest: 1,
    settleTurns: 20,
  });
  await commit();
  gate.release(gate.held[0]!.key);
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
  const stopping = new StoppingStore(inner, k, kill);
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

const KILLS: Kill[] = ["lands, then nothing", "lost, later ones land"];

const VARIANTS: Variant[] = [
  { hold: "first segment", beside: 1 },
  { hold: "first segment", beside: 4 },
  { hold: "manifest", beside: 1 },
  { hold: "manifest", beside: 4 },
];

for (const tuning of STATE_TUNINGS) {
  describe(`a writer stopped after every store write of a compaction's workload${tuning.name}`, () => {
    useStateTuning(tuning);
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
