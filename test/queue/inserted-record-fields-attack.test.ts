/**
 * @module The inserted job's record, written field by field, read back as
 * it was meant over every combination of the optional fields an enqueue
 * sets (a caller id, a priority at its bounds, attempts, headers of non-ASCII
 * names and values, a run time, a dedup key, a debounce window) and payloads
 * from empty to offloaded: through the view while the queue is open, and
 * again after a reopen decodes the stored bytes. Then claimed in priority
 * order: a job's priority key and its record agree.
 */
import { describe, expect, it } from "vitest";
import { type EnqueueOptions, MemoryStore, MockClock, Queue } from "taquba";
import { MAX_PRIORITY } from "../../runtime/queue/config.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const NOW = 1_700_000_000_000;

const HEADERS: Record<string, string> = Object.freeze({
  "x-é": "日本語",
  "emoji-😀": "😀".repeat(30),
  empty: "",
  long: "v".repeat(3000),
  "\u00ff": "\u0000\u0001",
});

/** The payload of the `i`th job: empty, small, just under and over the inline limit's usual size, and large. */
function payloadOf(i: number): Uint8Array {
  const sizes = [0, 1, 200, 70_000, 300_000];
  return new Uint8Array(sizes[i % sizes.length]!).fill(i & 255);
}

interface Wanted {
  opts: EnqueueOptions;
  payload: Uint8Array;
}

/** Every subset of the optional fields, by bit. */
function optionsOf(mask: number, i: number): EnqueueOptions {
  const o: EnqueueOptions = {};
  // A caller id at its longest in half the jobs.
  if (mask & 1) o.jobId = i % 2 === 0 ? `caller_${i}` : `caller_${i}_`.padEnd(128, "Z");
  // The bounds of a priority, and -0 (accepted as 0).
  if (mask & 2) o.priority = [0, MAX_PRIORITY, -0, 1][i % 4]!;
  if (mask & 4) o.maxAttempts = [1, 70_000][i % 2]!;
  if (mask & 8) o.headers = HEADERS;
  if (mask & 16) o.runAt = NOW + 60_000 + i;
  if (mask & 32) o.dedupKey = `dedup-ü-${i}`;
  if (mask & 64) o.debounce = { key: `debounce-${i}`, periodMs: 5_000 };
  return o;
}

async function expectJobs(queue: Queue, jobs: Map<string, Wanted>, when: string): Promise<void> {
  for (const [id, w] of jobs) {
    const info = await queue.view().job(id);
    const label = `${when}: ${JSON.stringify({ ...w.opts, headers: w.opts.headers === undefined ? undefined : "…" })}`;
    expect(info, label).not.toBeNull();
    const o = w.opts;
    const scheduled = o.runAt !== undefined || o.debounce !== undefined;
    expect(info!.state, label).toBe(scheduled ? "scheduled" : "pending");
    expect(Object.is(info!.priority, o.priority === undefined ? 5 : o.priority === 0 ? 0 : o.priority), label).toBe(true);
    expect(info!.maxAttempts, label).toBe(o.maxAttempts ?? 4);
    expect(info!.attempt, label).toBe(0);
    expect(info!.headers, label).toEqual(o.headers ?? {});
    expect(info!.payloadSize, label).toBe(w.payload.byteLength);
    expect(info!.enqueuedAt, label).toBe(NOW);
    if (o.runAt !== undefined) expect(info!.runAt, label).toBe(o.runAt);
    expect(info!.dedupKey, label).toBe(o.dedupKey);
    expect(info!.debounceKey, label).toBe(o.debounce?.key);
    expect(info!.cancelRequested, label).toBe(false);
    expect(info!.claimedAt, label).toBeUndefined();
  }
}

describe("an inserted job's record over its optional fields (attack)", { timeout: HEAVY_TEST_MS }, () => {
  it("every combination of the optional fields and payloads from empty to offloaded reads back as enqueued, before and after a reopen", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(NOW);
    const open = () => Queue.open(store, "q", { clock, flushIntervalMs: 0, queueConfigs: { q: { maxAttempts: 4, defaultPriority: 5 } } });
    let queue = await open();
    const jobs = new Map<string, Wanted>();
    let refused = 0;
    for (let mask = 0; mask < 128; mask++) {
      for (let i = mask * 2; i < mask * 2 + 2; i++) {
        const opts = optionsOf(mask, i);
        const payload = payloadOf(i);
        if (opts.runAt !== undefined && opts.debounce !== undefined) {
          // The one refused combination: refused whole, nothing written.
          await expect(queue.enqueue("q", payload, opts)).rejects.toThrow(/debounce cannot be combined with runAt/);
          if (opts.jobId !== undefined) expect(await queue.view().job(opts.jobId)).toBeNull();
          refused++;
          continue;
        }
        const { jobId } = await queue.enqueue("q", payload, opts);
        if (opts.jobId !== undefined) expect(jobId).toBe(opts.jobId);
        jobs.set(jobId, { opts, payload });
      }
    }
    expect(refused).toBe(64);
    expect(jobs.size).toBe(192);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 64, scheduled: 128 });
    await expectJobs(queue, jobs, "open");
    await queue.close();
    queue = await open();
    await expectJobs(queue, jobs, "reopened");
    // Claimed in priority order (lower first), each with its own payload and headers.
    clock.advance(3_600_000);
    const claimedPriorities: number[] = [];
    for (;;) {
      const job = await queue.claim("q", 60_000);
      if (job === null) break;
      const w = jobs.get(job.id)!;
      expect(Buffer.from(job.payload).equals(Buffer.from(w.payload)), job.id).toBe(true);
      expect(job.headers).toEqual(w.opts.headers ?? {});
      claimedPriorities.push((await queue.view().job(job.id))!.priority);
      await queue.ack(job);
    }
    expect(claimedPriorities.length).toBe(jobs.size);
    expect(claimedPriorities).toEqual([...claimedPriorities].sort((a, b) => a - b));
    await queue.close();
  });
});
