/**
 * @module Two and three opens racing each other and a live owner that
 * commits and checkpoints, interleaved by seeded delays counted in event
 * loop turns before every store call (no sleeps), over a real directory,
 * all opens reading one clock so their claims carry the same time. Whatever
 * the order: no two opens win the same epoch, every commit any writer
 * acknowledged is in the store afterwards, and the newest manifest lists
 * no missing segment.
 */
import { describe, expect, it } from "vitest";
import {
  Engine,
  FencedError,
  LocalStore,
  MockClock,
  StoreUnavailableError,
  WriteBatch,
  type ListOptions,
  type ListedObject,
  type PutOptions,
  type StoredObject,
} from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { missingListed } from "../support/store-keys.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { turns } from "../support/turns.js";

const tempDir = useTempDirs("taquba-open-interleavings-");
const enc = (s: string) => new TextEncoder().encode(s);
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

/** Each call waits a seeded number of event-loop turns (0-3) first. */
class ShuffledStore extends ForwardingStore {
  constructor(
    inner: LocalStore,
    readonly rand: TestRandom,
  ) {
    super(inner);
  }

  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    await turns(this.rand.int(4));
    return this.inner.put(key, body, opts);
  }

  override async get(key: string): Promise<StoredObject | null> {
    await turns(this.rand.int(4));
    return this.inner.get(key);
  }

  override async delete(key: string): Promise<void> {
    await turns(this.rand.int(4));
    return this.inner.delete(key);
  }

  override async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    await turns(this.rand.int(4));
    yield* this.inner.list(prefix, opts);
  }
}

/** Commits keys `<name>/<i>` until one fails or `stop()`, checkpointing after each when `checkpoints`; resolves to the acknowledged keys. */
async function commitUntilFenced(e: Engine, name: string, count: number, checkpoints: boolean, stop: () => boolean): Promise<string[]> {
  const acked: string[] = [];
  for (let i = 0; i < count && !stop(); i++) {
    try {
      await e.commit(new WriteBatch().put(`${name}/${i}`, enc(name)));
      acked.push(`${name}/${i}`);
      if (checkpoints) await e.checkpoint();
    } catch {
      break;
    }
    await turns(1);
  }
  return acked;
}

async function race(openers: number, rand: TestRandom): Promise<void> {
  const dir = await tempDir();
  const owner = await Engine.open(new LocalStore(dir), MANUAL);
  await owner.commit(new WriteBatch().put("base", enc("b")));
  await owner.checkpoint();
  const clock = new MockClock();
  let opensSettled = false;
  const ownerAcked = commitUntilFenced(owner, "owner", 40, true, () => opensSettled);
  const outcomes = await Promise.allSettled(
    Array.from({ length: openers }, (_, i) =>
      Engine.open(new ShuffledStore(new LocalStore(dir), rand), { ...MANUAL, clock }).then(async (e) => ({
        epoch: e.epoch,
        acked: await commitUntilFenced(e, `opener${i}`, 3, false, () => false),
        engine: e,
      })),
    ),
  );
  opensSettled = true;
  const acked = [...(await ownerAcked)];
  const epochs: number[] = [];
  for (const o of outcomes) {
    if (o.status === "rejected") {
      // A lost race or a take-over given up on: nothing else.
      expect(
        [FencedError, StoreUnavailableError].some((c) => o.reason instanceof c),
        String(o.reason),
      ).toBe(true);
      continue;
    }
    epochs.push(o.value.epoch);
    acked.push(...o.value.acked);
    await o.value.engine.close().catch(() => {});
  }
  await owner.close().catch(() => {});
  expect(new Set(epochs).size, `epochs of the opens that won: ${epochs.join(", ")}`).toBe(epochs.length);
  const store = new LocalStore(dir);
  expect(await missingListed(store)).toEqual([]);
  const again = await Engine.open(store, MANUAL);
  expect(again.has("base")).toBe(true);
  for (const k of acked) expect(again.has(k), k).toBe(true);
  await again.close();
}

describe("opens racing each other and a live owner, in seeded orders", () => {
  for (const openers of [2, 3]) {
    it(`${openers} opens: one epoch per winner, every acknowledged commit kept, no listed segment missing`, async () => {
      const rand = testRandom(`open interleavings of ${openers}`);
      for (let round = 0; round < 8; round++) await race(openers, rand);
    }, 120_000);
  }
});
