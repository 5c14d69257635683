/**
 * @module Compaction by tiers (`foldRunsByTier`) attacked over real files:
 * an engine fills, rewrites and deletes keys across checkpoints that fold
 * the newest runs at `maxSegmentRuns`, drains to empty and fills again,
 * is reopened with the option turned off and on again, and has readers
 * opened while checkpoints run and after; with store faults (before and
 * after a put lands) on every call. Every key is compared with a model at
 * each step: no tombstone dropped by a fold, no old value back.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, LocalStore, S3Store, WriteBatch, withFaults, type EngineOptions, type FaultyStore, type ObjectStore } from "taquba";
import { seededRandom } from "../../runtime/store/prng.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-tier-fold-");

const retry = { attempts: 40, baseDelayMs: 0, maxDelayMs: 0 };
/** A checkpoint per WAL object, three runs at most, small blocks and segments: folds by tier come every few commits. */
const TIER: EngineOptions = { checkpointWalObjects: 1, maxSegmentRuns: 3, segmentBlockBytes: 64, maxSegmentBytes: 256, flushIntervalMs: 0, retry };

const value = (key: string, version: number) => new TextEncoder().encode(`${key}@${version}`);
const text = (v: Uint8Array) => new TextDecoder().decode(v);

/** The model's entries in the engine's order (UTF-8 byte order of keys), values as text. */
function modelEntries(model: Map<string, number>): [string, string][] {
  return [...model].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b))).map(([k, v]) => [k, text(value(k, v))]);
}

const entries = (e: { scan(): IterableIterator<[string, Uint8Array]> }): [string, string][] => [...e.scan()].map(([k, v]) => [k, text(v)]);

/** How much each round writes: its keys (filled three to a commit, drained four to a commit) and its churn commits. */
interface Rounds {
  keys: number;
  churn: number;
}

/** Over files: 20 fill commits, 40 churn and up to 15 drain a round. */
const FULL: Rounds = { keys: 60, churn: 40 };

async function attack(
  seed: number,
  faults: boolean,
  base?: ObjectStore,
  size: Rounds = FULL,
): Promise<{ tierFolds: number; compactions: number; injected: number }> {
  const random = seededRandom(seed);
  const local = base ?? new LocalStore(await tempDir());
  const faulty: FaultyStore | undefined = faults ? withFaults(local, { failureRate: 0.08, seed, failAfterWriteRate: 0.5 }) : undefined;
  const store = faulty ?? local;
  let byTier = true;
  let engine = await Engine.open(store, { ...TIER, foldRunsByTier: byTier });
  const model = new Map<string, number>();
  let version = 0;
  let tierFolds = 0;
  let compactions = 0;

  const check = (what: string) => expect(entries(engine), what).toEqual(modelEntries(model));
  const commit = async (b: WriteBatch) => {
    await engine.commit(b);
  };
  const put = (b: WriteBatch, key: string) => {
    version++;
    b.put(key, value(key, version));
    model.set(key, version);
  };
  const del = (b: WriteBatch, key: string) => {
    b.delete(key);
    model.delete(key);
  };
  /** A reader opened while a checkpoint runs (started, not awaited), and again after it. */
  const readerDuringCheckpoint = async () => {
    await engine.flush();
    const expected = modelEntries(model);
    const running = engine.checkpoint();
    const reader = await EngineReader.open(store, { retry });
    expect(entries(reader), "a reader opened during a checkpoint").toEqual(expected);
    await running;
    await reader.refresh();
    expect(entries(reader), "that reader refreshed after it").toEqual(expected);
    await reader.close();
  };
  const reopen = async (tiers: boolean) => {
    tierFolds += engine.stats.runsFoldedByTier;
    compactions += engine.stats.compactions;
    await engine.close();
    byTier = tiers;
    engine = await Engine.open(store, { ...TIER, foldRunsByTier: byTier });
    check(`reopened with foldRunsByTier ${byTier}`);
  };

  const keys = Array.from({ length: size.keys }, (_, i) => `k/${String(i).padStart(3, "0")}`);
  for (let round = 0; round < 2; round++) {
    // Fill: new keys a few per commit, each commit its own WAL object and checkpoint.
    for (let i = 0; i < keys.length; i += 3) {
      const b = new WriteBatch();
      for (const k of keys.slice(i, i + 3)) put(b, k);
      await commit(b);
      if (random() < 0.15) await readerDuringCheckpoint();
    }
    check("after the fill");
    await reopen(!byTier);
    // Churn: rewrite, delete and re-put keys across the checkpoints that fold.
    for (let i = 0; i < size.churn; i++) {
      const b = new WriteBatch();
      for (let j = 0; j < 3; j++) {
        const k = keys[Math.floor(random() * keys.length)]!;
        if (random() < 0.45) del(b, k);
        else put(b, k);
      }
      await commit(b);
      if (random() < 0.1) await readerDuringCheckpoint();
      if (random() < 0.05) await reopen(random() < 0.6);
    }
    check("after the churn");
    // Drain to empty, then the next round fills again over the tombstones.
    const live = [...model.keys()];
    for (let i = 0; i < live.length; i += 4) {
      const b = new WriteBatch();
      for (const k of live.slice(i, i + 4)) del(b, k);
      await commit(b);
      if (random() < 0.15) await readerDuringCheckpoint();
    }
    expect(model.size).toBe(0);
    check("drained to empty");
    await reopen(true);
    await readerDuringCheckpoint();
  }
  await reopen(false);
  await reopen(true);
  tierFolds += engine.stats.runsFoldedByTier;
  compactions += engine.stats.compactions;
  await engine.close();
  // Without faults, a plain open of the store gives the model's state.
  const plain = await Engine.open(local, { retry });
  expect(entries(plain)).toEqual(modelEntries(model));
  await plain.close();
  return { tierFolds, compactions, injected: faulty?.injected ?? 0 };
}

describe("compaction by tiers over real files, toggled across reopens, drained and refilled, readers during folds", { timeout: HEAVY_TEST_MS }, () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: every step matches the model`, async () => {
      const { tierFolds, compactions } = await attack(seed, false);
      expect(tierFolds).toBeGreaterThan(0);
      expect(compactions).toBeGreaterThan(0);
    });
  }
  for (const seed of [11, 12, 13]) {
    it(`seed ${seed}, store faults on every call (half of failed puts after landing): every step matches the model`, async () => {
      const { tierFolds, injected } = await attack(seed, true);
      expect(tierFolds).toBeGreaterThan(0);
      expect(injected).toBeGreaterThan(0);
    });
  }
});

describe("compaction by tiers over S3Store (s3rver on loopback), with store faults", { timeout: HEAVY_TEST_MS }, () => {
  const server = useS3Server();
  // Every commit is a WAL object and a checkpoint, each several HTTP exchanges: half the rounds' commits, with
  // the same steps (fill, toggled reopens, churn, drain to empty, refill over the tombstones, readers during folds).
  it("seed 21: every step matches the model", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: "tier-fold", clientConfig: server.clientConfig });
    const { tierFolds, injected } = await attack(21, true, store, { keys: 30, churn: 20 });
    expect(tierFolds).toBeGreaterThan(0);
    expect(injected).toBeGreaterThan(0);
  });
});
