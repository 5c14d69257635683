/**
 * @module The inserted job record's direct layout asks the shared chunk for
 * room once; a header map that nearly fills that room must not push the
 * fields after it (attempts, times, dedup and debounce keys) past it. With
 * the chunk's end just past the room asked for, such a record was cut short
 * where its encoding was copied out (a record that no longer decodes, with
 * the enqueue reporting success) or failed with a `RangeError` where it was
 * handed out as a view. Each record here is written with the chunk's end at
 * every position around the record's end, both ways.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "../../runtime/index.js";
import { encodeInsertedJob } from "../../runtime/queue/inserted-record.js";
import { decodeJob, type JobRecord } from "../../runtime/queue/record.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

const ID = "01M913J8FSCWVKEGKCP67SH000";

/** A record as `insertJobRecord` writes it (its literal's keys, in order), with a header map of `headerBytes` bytes of text in `entries` entries. */
function record(kind: "pending" | "claimed" | "scheduled", headerBytes: number, entries: number): JobRecord {
  const headers: Record<string, string> = {};
  for (let i = 0; i < entries; i++) {
    const share = Math.floor(headerBytes / entries) + (i < headerBytes % entries ? 1 : 0);
    headers[`h${i}`] = "v".repeat(share);
  }
  const r = {
    id: ID,
    queue: "workflow-steps",
    state: kind,
    seq: ID,
    priority: 1000,
    payload: new Uint8Array([1, 2, 3]),
    payloadRef: undefined,
    payloadSize: undefined,
    headers: Object.freeze(headers),
    attempts: kind === "claimed" ? 1 : 0,
    maxAttempts: 3,
    enqueuedAt: 1796407370233.5,
    runAt: kind === "scheduled" ? 1796407379999.5 : undefined,
    dedupKey: kind === "claimed" ? undefined : `dedup-${"d".repeat(60)}`,
    debounceKey: kind === "scheduled" ? `debounce-${"b".repeat(60)}` : undefined,
  } as JobRecord;
  if (kind === "claimed") r.claimedAt = 1796407370233.5;
  return r;
}

/** Small records of every encoded length from their shortest up, to move the shared chunk's next record to a chosen place. */
const fillers = new Map<number, JobRecord>();
// Two id lengths: the payload's length header grows by a byte at 256, which one length alone would skip.
for (const id of ["f", "ff"]) {
  for (let n = 0; n < 1800; n++) {
    const f = { id, queue: "q", state: "pending", seq: "f", priority: 0, payload: new Uint8Array(n), attempts: 0, maxAttempts: 1, enqueuedAt: 1 } as JobRecord;
    const size = general.pack(f).length;
    if (!fillers.has(size)) fillers.set(size, f);
  }
}
const shortestFiller = Math.min(...fillers.keys());
const longestFiller = 1500;

/** The bytes left in the shared chunk after the view `v` the encoder handed out. */
const leftAfter = (v: Uint8Array) => v.buffer.byteLength - (v.byteOffset + v.byteLength);

/** Moves the shared chunk on until exactly `left` bytes follow the last record handed out (or gives up: false). */
function leaveInChunk(left: number): boolean {
  let now = leftAfter(encodeInsertedJob(fillers.get(shortestFiller)!, true));
  for (let i = 0; i < 100; i++) {
    const gap = now - left;
    if (gap === 0) return true;
    // Too little to fill exactly: a filler longer than what is left starts a fresh chunk.
    const size = gap >= shortestFiller && gap <= longestFiller ? gap : gap > longestFiller ? longestFiller : Math.min(longestFiller, now + 1);
    const next = fillers.get(Math.max(size, shortestFiller));
    if (next === undefined) return false;
    now = leftAfter(encodeInsertedJob(next, true));
  }
  return false;
}

describe("an inserted record whose header map nearly fills the room asked for", () => {
  it("is written whole wherever the chunk ends, handed out as a view or copied out", { timeout: HEAVY_TEST_MS }, () => {
    let placed = 0;
    for (const kind of ["pending", "claimed", "scheduled"] as const) {
      for (const entries of [1, 2, 15]) {
        for (let headerBytes = 420; headerBytes <= 760; headerBytes += 29) {
          const rec = record(kind, headerBytes, entries);
          const expected = hex(general.pack(rec));
          const length = expected.length / 2;
          for (let left = length - 160; left <= length + 4; left += 4) {
            for (const shared of [true, false]) {
              if (!leaveInChunk(left)) continue;
              placed++;
              const where = `${kind}, ${entries} headers of ${headerBytes} bytes, ${left} bytes left in the chunk, ${shared ? "a view" : "copied"}`;
              const got = encodeInsertedJob(rec, shared);
              expect(hex(got), where).toBe(expected);
              expect(decodeJob("j/x", got).headers, where).toEqual(rec.headers);
            }
          }
        }
      }
    }
    // Placed for most cases (a filler asks for more room than it takes, so an end closer than that cannot be
    // left, nor is it asked for by the record): a test that placed none would pass without looking.
    expect(placed).toBeGreaterThan(3 * 3 * 12 * 42 * 2 * 0.6);
  });

  it("every enqueue of a job with such headers succeeds and reads back, through a queue", { timeout: HEAVY_TEST_MS }, async () => {
    const queue = await Queue.open(new MemoryStore(), "app", { flushIntervalMs: 1 });
    try {
      const ids: string[] = [];
      // Header maps of 600-759 bytes with a dedup key: one enqueue in nine failed with a RangeError.
      for (let i = 0; i < 800; i++) {
        const bytes = 600 + (i % 160);
        const headers = { a: "x".repeat(bytes >> 1), b: "y".repeat(bytes - (bytes >> 1)) };
        ids.push((await queue.enqueue("jobs", new Uint8Array([i & 0xff]), { headers, dedupKey: `d-${i}-${"k".repeat(40)}` })).jobId);
      }
      for (const [i, id] of ids.entries()) {
        const job = await queue.view().job(id);
        expect(job?.headers.a?.length, `job ${i}`).toBe((600 + (i % 160)) >> 1);
      }
    } finally {
      await queue.close();
    }
  });
});
