/**
 * @module Attacks on the record cache (paged job records read through the
 * engine's segment cache, with its set of read-through blocks) at budgets
 * of 0, 1 byte and a few hundred bytes: a drain in order
 * (claims of several jobs, then acks) raced by readers of random records,
 * a reopen in the middle, over a LocalStore (reads take turns of the event
 * loop). Every job is handed out once with its own payload, every read
 * answers the record's true state, and the outcome is the one with every
 * record in memory (`recordCacheBytes: null`).
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, Queue } from "taquba";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc } from "./helpers.js";

const tempDir = useTempDirs("record-cache-budgets-");

const JOBS = 48;
/**
 * The limit on a quiet machine, stretched by the load while the test runs:
 * four drains of about 200 synced puts each, whose wall time grows with the
 * disk's and the cores' contention (30 s at load 47; a fixed 60 s ran out at
 * load 50).
 */
const LIMIT_MS = 30_000;

/** Runs the scenario with `recordCacheBytes` and returns what was handed out, in order, and what readers saw wrong. */
async function scenario(recordCacheBytes: number | null, seed: number): Promise<{ handed: string[]; wrong: string[]; misses: number }> {
  const { seededRandom } = await import("../../runtime/store/prng.js");
  const random = seededRandom(seed);
  const dir = await tempDir();
  const clock = new MockClock(1_700_000_000_000);
  const opts = { clock, flushIntervalMs: 0, recordCacheBytes, engineOptions: { checkpointWalObjects: 2, segmentBlockBytes: 256 } };
  let queue = await Queue.open(new LocalStore(dir), "q", opts);
  const ids: string[] = [];
  const texts = new Map<string, string>();
  for (let i = 0; i < JOBS; i++) {
    // Sizes on both sides of the pager's 64-byte threshold.
    const text = `job ${i} ${"x".repeat(Math.floor(random() * 200))}`;
    const { jobId } = await queue.enqueue("jobs", enc(text));
    ids.push(jobId);
    texts.set(jobId, text);
  }
  await queue.close();
  const handed: string[] = [];
  const acked = new Set<string>();
  const wrong: string[] = [];
  let misses = 0;
  for (const half of [0, 1]) {
    queue = await Queue.open(new LocalStore(dir), "q", opts);
    let draining = true;
    const reader = (async () => {
      while (draining) {
        const id = ids[Math.floor(random() * ids.length)]!;
        const info = await queue.view().job(id);
        // A record read while the drain goes on is pending, claimed or gone (acked without history); never another's.
        if (info !== null && info.id !== id) wrong.push(`${id} read as ${info.id}`);
        if (info !== null && acked.has(id) && info.state !== "done") wrong.push(`${id} acked, read as ${info.state}`);
        await new Promise((r) => setImmediate(r));
      }
    })();
    try {
      while (handed.length < (half === 0 ? JOBS / 2 : JOBS)) {
        const batch = await queue.claimBatch("jobs", 1 + Math.floor(random() * 7), 60_000);
        if (batch.length === 0) break;
        for (const job of batch) {
          const text = dec(job.payload);
          if (text !== texts.get(job.id)) wrong.push(`${job.id} handed out with another payload`);
          handed.push(text.split(" ").slice(0, 2).join(" "));
          await queue.ack(job);
          acked.add(job.id);
        }
      }
    } finally {
      draining = false;
      await reader;
      misses += queue.engineStats.cacheMisses;
      await queue.close();
    }
  }
  return { handed, wrong, misses };
}

describe("the record cache at tiny budgets", () => {
  it(
    "a drain raced by readers and a reopen: every job once with its payload, in order, as with every record in memory",
    { timeout: loadLimitTimeout(LIMIT_MS) },
    () =>
      withinLoadLimit(LIMIT_MS, async () => {
        const r = testRandom("record cache budgets");
        const seed = r.int(2 ** 32);
        const { misses: none, ...all } = await scenario(null, seed);
        expect(none, "no record paged").toBe(0);
        expect(all.wrong).toEqual([]);
        expect(all.handed).toEqual(Array.from({ length: JOBS }, (_, i) => `job ${i}`));
        for (const budget of [0, 1, 300]) {
          const { misses, ...got } = await scenario(budget, seed);
          expect(got, `recordCacheBytes ${budget}`).toEqual(all);
          // Read back from the segments, not all held in memory: the cache was in play.
          expect(misses, `recordCacheBytes ${budget}`).toBeGreaterThan(JOBS / 4);
        }
      }),
  );
});
