/**
 * @module Compactions read paged values back into windows they reuse (see
 * value-pager.ts `compactionReader`). Attacked from the reader's side over
 * the stores that read into a caller's buffer for real (a LocalStore, and
 * an S3Store over s3rver, whose bodies arrive in chunks): values read with
 * `get` and `scan` and held across many compactions must keep their bytes,
 * with reads failing at seeded random (a failed read may have written part
 * of its window), values of every size around the block and window sizes,
 * and on the LocalStore a value larger than the spare windows' budget. The
 * state equals a model after every round and after a reopen.
 */
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, S3Store, WriteBatch, withFaults, type EngineOptions, type ObjectStore } from "taquba";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { useS3Server } from "../support/use-s3-server.js";

const server = useS3Server();
const tempDir = useTempDirs("taquba-window-held-");

/** Checkpoints by hand; a compaction once three runs are listed; values under j/ paged, a small block cache. */
const options: EngineOptions = {
  pageValues: { keyPrefixes: ["j/"], minBytes: 32, cacheBytes: 64 * 1024 },
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentRuns: 3,
  segmentBlockBytes: 2048,
  retry: { attempts: 40, baseDelayMs: 0, maxDelayMs: 0 },
};

const key = (i: number) => `j/${String(i).padStart(5, "0")}`;

/** A value naming its key and round, `size` bytes, its filler drawn from both (so two values never share bytes by chance). */
function valueBytes(k: string, round: number, size: number): Uint8Array {
  const head = new TextEncoder().encode(`${k}@${round}:`);
  const out = new Uint8Array(Math.max(size, head.length));
  out.set(head);
  let x = (round * 7919 + Number(k.slice(2))) >>> 0;
  for (let i = head.length; i < out.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** Sizes around the paging threshold, the block size and the 64 KiB windows' least size. */
function sizeOf(r: TestRandom): number {
  const pick = r.int(10);
  if (pick < 5) return 32 + r.int(200);
  if (pick < 8) return 1500 + r.int(1200);
  if (pick < 9) return 2048 + r.int(4);
  return 60_000 + r.int(10_000);
}

interface Held {
  key: string;
  view: Uint8Array;
  copy: Uint8Array;
}

async function warmed(engine: Engine, keys: string[]): Promise<void> {
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
}

/** Rounds of puts and deletes, each checkpointed (compactions follow), holding values read between them. */
async function attack(store: ObjectStore, r: TestRandom, rounds: number, count: number, huge: number | undefined): Promise<void> {
  const faulty = withFaults(store, { failureRate: 0.08, seed: r.int(1_000_000), ops: ["get"] });
  const model = new Map<string, Uint8Array>();
  const held: Held[] = [];
  let engine = await Engine.open(faulty, options);
  try {
    for (let round = 0; round < rounds; round++) {
      const b = new WriteBatch();
      for (let n = 0; n < count; n++) {
        const k = key(r.int(count * 2));
        if (r.int(12) === 0 && model.has(k)) {
          b.delete(k);
          model.delete(k);
        } else {
          const v = valueBytes(k, round, sizeOf(r));
          b.put(k, v);
          model.set(k, v);
        }
      }
      if (huge !== undefined && round % 4 === 0) {
        const v = valueBytes("j/huge", round, huge);
        b.put("j/huge", v);
        model.set("j/huge", v);
      }
      await engine.commit(b);
      await engine.checkpoint();
      // Values read now, paged or not, held while the next rounds' compactions read windows again.
      const keys = [...model.keys()];
      const picks = Array.from({ length: 25 }, () => keys[r.int(keys.length)]!);
      if (model.has("j/huge")) picks.push("j/huge");
      await warmed(engine, picks);
      for (const k of picks) {
        const view = engine.get(k)!;
        held.push({ key: k, view, copy: Uint8Array.from(view) });
      }
      const from = key(r.int(count * 2));
      const range = [...model.keys()]
        .filter((k) => k >= from)
        .sort()
        .slice(0, 40);
      await warmed(engine, range);
      for (const [k, view] of engine.scan({ start: from, limit: 40 })) held.push({ key: k, view, copy: Uint8Array.from(view) });
      for (const h of held) if (!bytesSame(h.view, h.copy)) throw new Error(`a value of ${h.key} held since an earlier round changed in round ${round}`);
    }
    expect(engine.stats.compactions).toBeGreaterThanOrEqual(2);
    expect(faulty.injected).toBeGreaterThan(0);
    await checkModel(engine, model);
    await engine.close();
    faulty.failureRate = 0;
    engine = await Engine.open(faulty, options);
    await checkModel(engine, model);
    for (const h of held) expect(bytesSame(h.view, h.copy), `held value of ${h.key}`).toBe(true);
  } finally {
    await engine.close();
  }
}

function bytesSame(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

async function checkModel(engine: Engine, model: Map<string, Uint8Array>): Promise<void> {
  const keys = [...model.keys()];
  await warmed(engine, keys);
  let wrong = 0;
  for (const k of keys) if (!bytesSame(engine.get(k) ?? new Uint8Array(0), model.get(k)!)) wrong++;
  const listed = [...engine.scan({ prefix: "j/" })].map(([k]) => k);
  expect(wrong).toBe(0);
  expect(listed).toEqual(keys.sort());
}

describe("values held while compactions reuse their windows", () => {
  it("over a LocalStore, with a value past the spare windows' budget and reads failing at random", { timeout: HEAVY_TEST_MS }, async () => {
    const r = testRandom("window-held-local");
    await attack(new LocalStore(await tempDir()), r, 5, 250, 11 * 1024 * 1024);
  });

  it("over s3rver, with reads failing at random", { timeout: HEAVY_TEST_MS }, async () => {
    const r = testRandom("window-held-s3");
    const store = new S3Store({ bucket: server.bucket, prefix: `window-held-${r.seed}`, clientConfig: server.clientConfig });
    await attack(store, r, 4, 160, undefined);
  });
});
