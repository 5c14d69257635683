/**
 * @module Job records holding a number outside its field's range: a
 * priority below 0, fractional or past 2^32-1; a payload size, attempt or
 * requeue count that is negative, fractional, NaN or past 2^53; an attempt
 * limit below 1; a time that is NaN, negative, infinite or past 2^53. No
 * writer makes one, so each is damage: refused at decode naming the field
 * (on the direct read, the general decoder's and the defining one's), shown
 * by `view().job` as `JobRecordDamagedError`, and set aside as dead
 * (`record_corrupted`) by a claim, a promotion or recovery at open, never
 * acted on: a negative attempt count granted attempts past the limit, a NaN
 * due time made cancel throw a `ValidationError` about an index time.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, JobRecordDamagedError, MemoryStore, MockClock, Queue, StoreCorruptedError, WriteBatch } from "taquba";
import { jobKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { decodeJob } from "../../runtime/queue/record.js";
import { underIndexes } from "../support/polluted-prototype.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const T0 = 1_764_000_000_000;

/** `v` as MessagePack, a number that is not a small integer written as a float64 (a form the direct read takes). */
function valueBytes(v: unknown): number[] {
  if (typeof v !== "number" || (Number.isInteger(v) && Math.abs(v) < 2 ** 31)) return [...general.pack(v)];
  const f = new Uint8Array(9);
  f[0] = 0xcb;
  new DataView(f.buffer).setFloat64(1, v);
  return [...f];
}

/** A job record map of `fields`, each number past a small integer as a float64. */
function recordOf(fields: Record<string, unknown>): Uint8Array {
  const entries = Object.entries(fields);
  const out: number[] = entries.length < 16 ? [0x80 | entries.length] : [0xde, 0, entries.length];
  for (const [name, value] of entries) out.push(...general.pack(name), ...valueBytes(value));
  return new Uint8Array(out);
}

const BASE = {
  id: "01JD0000000000000000000000",
  queue: "w",
  state: "pending",
  seq: "01JD0000000000000000000000",
  priority: 0,
  payload: new Uint8Array([1, 2, 3]),
  attempts: 0,
  maxAttempts: 3,
  enqueuedAt: T0,
};

/** The three ways a record is decoded (see record-fields-damaged-attack.test.ts). */
const PATHS: [string, (bytes: Uint8Array) => unknown, Record<string, unknown>][] = [
  ["read directly", (b) => decodeJob("j/x", b), {}],
  ["by the general decoder", (b) => decodeJob("j/x", b), { lastError: "é" }],
  [
    "by the defining decoder",
    (b) => {
      const { value, error } = underIndexes(Array.prototype, ["0"], { value: "planted", writable: true }, () => decodeJob("j/x", b));
      if (error !== undefined) throw error;
      return value;
    },
    {},
  ],
];

const TIMES = ["enqueuedAt", "claimedAt", "runAt", "wokenAt", "completedAt", "failedAt", "retainUntil"];
const COUNTS = ["attempts", "requeues", "payloadSize"];
const NO_NUMBER = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e300, 2 ** 53, -1, -(2 ** 40)];

/** Each field with values outside its range, and values at its range's edges that it holds. */
const RANGES: [field: string, outside: number[], inside: number[]][] = [
  ["priority", [...NO_NUMBER, 2 ** 32, 0.5, 1.5], [0, 2 ** 32 - 1]],
  ["maxAttempts", [...NO_NUMBER, 0, 1.5], [1, Number.MAX_SAFE_INTEGER]],
  ...COUNTS.map((f): [string, number[], number[]] => [f, [...NO_NUMBER, 0.5, 2.5], [0, Number.MAX_SAFE_INTEGER]]),
  ...TIMES.map((f): [string, number[], number[]] => [f, NO_NUMBER, [0, 0.5, T0, T0 + 0.25, 8.64e15, Number.MAX_SAFE_INTEGER]]),
];

describe("job record numbers outside their field's range", () => {
  it.each(PATHS)("are refused at decode naming the field and the value, %s", (_path, decode, extra) => {
    for (const [field, outside] of RANGES) {
      for (const v of outside) {
        let err: unknown;
        try {
          decode(recordOf({ ...BASE, ...extra, [field]: v }));
        } catch (e) {
          err = e;
        }
        expect(err, `${field} = ${v}`).toBeInstanceOf(StoreCorruptedError);
        expect((err as StoreCorruptedError).objectKey).toBe("j/x");
        expect((err as Error).message, `${field} = ${v}`).toMatch(
          new RegExp(`its (${field} ${escaped(String(v))} is not a |attempt count or limit is not a whole number|requeue count is not a whole number)`),
        );
      }
    }
  });

  it.each(PATHS)("are read as they are at the edges of their range, %s", (_path, decode, extra) => {
    for (const [field, , inside] of RANGES) {
      for (const v of inside) {
        const rec = decode(recordOf({ ...BASE, ...extra, [field]: v })) as Record<string, unknown>;
        expect(rec[field], `${field} = ${v}`).toBe(v);
      }
    }
  });
});

/** `text` matched as it is in a pattern. */
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A queue over `store` at `clock`. */
const open = (store: MemoryStore, clock: MockClock) => Queue.open(store, "q", { clock, flushIntervalMs: 0 });

/** Rewrites job `jobId`'s stored record with `change` applied, under a closed queue, as a hostile store or another writer would. */
async function damage(store: MemoryStore, jobId: string, change: Record<string, unknown>): Promise<void> {
  const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
  try {
    const rec = general.unpack(engine.get(jobKey(jobId))!) as Record<string, unknown>;
    await engine.commit(new WriteBatch().put(jobKey(jobId), recordOf({ ...rec, ...change })));
  } finally {
    await engine.close();
  }
}

/** The damage `view().job` reports for `jobId`, or what it answered instead. */
async function viewed(queue: Queue, jobId: string): Promise<unknown> {
  try {
    return await queue.view().job(jobId);
  } catch (e) {
    return e;
  }
}

/** Damage a pending job's record may hold, by what it is. */
const PENDING_DAMAGE: [string, Record<string, unknown>][] = [
  ["a negative priority", { priority: -1 }],
  ["a priority past 2^32-1", { priority: 2 ** 32 }],
  ["a fractional priority", { priority: 2.5 }],
  ["a NaN enqueue time", { enqueuedAt: Number.NaN }],
  ["a negative enqueue time", { enqueuedAt: -5 }],
  ["an enqueue time of 1e300", { enqueuedAt: 1e300 }],
  ["a negative attempt count", { attempts: -5 }],
  ["an attempt count past 2^53", { attempts: 2 ** 53 }],
  ["an attempt limit of 0", { maxAttempts: 0 }],
  ["a negative payload size", { payloadSize: -1 }],
  ["a NaN payload size", { payloadSize: Number.NaN }],
  ["a negative retention time", { retainUntil: -1 }],
];

describe("a job whose record holds a number outside its range", () => {
  it.each(PENDING_DAMAGE)("with %s is shown as damaged and set aside as dead at a claim", async (what, change) => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    let queue = await open(store, clock);
    const { jobId } = await queue.enqueue("w", new Uint8Array([1, 2, 3]), { priority: 5 });
    await queue.close();
    await damage(store, jobId, change);

    queue = await open(store, clock);
    try {
      const [field] = Object.keys(change);
      const seen = await viewed(queue, jobId);
      expect(seen, what).toBeInstanceOf(JobRecordDamagedError);
      expect((seen as JobRecordDamagedError).jobId).toBe(jobId);
      expect((seen as Error).message).toMatch(new RegExp(`its ${field} `));
      // Set aside, not claimed with the value: a later good job is claimed.
      const good = await queue.enqueue("w", new Uint8Array([4]));
      const job = await queue.claim("w", 30_000);
      expect(job?.id, what).toBe(good.jobId);
      await queue.ack(job!);
      const info = await queue.view().job(jobId);
      expect(info?.state, what).toBe("dead");
      expect(info?.lastError, what).toMatch(new RegExp(`^record_corrupted: .*its ${field} `));
      // What could be read of it is kept, each number within its range.
      // The pending index's priority, which ordered it.
      expect(info?.priority).toBe(5);
      expect(info?.enqueuedAt).toBe(change.enqueuedAt === undefined ? T0 : clock.now());
      expect(info?.maxAttempts).toBeGreaterThanOrEqual(1);
      expect(await queue.view().stats("w"), what).toMatchObject({ pending: 0, claimed: 0, dead: 1, done: 1 });
    } finally {
      await queue.close();
    }
  });

  it("with a negative attempt count while claimed is set aside at recovery, not granted attempts past its limit", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    let queue = await open(store, clock);
    const { jobId } = await queue.enqueue("w", new Uint8Array([1]), { maxAttempts: 2 });
    expect((await queue.claim("w", 30_000))?.attempt).toBe(1);
    // A crash while claimed: recovery at the next open hands the job out again while attempts remain.
    await queue.close();
    await damage(store, jobId, { attempts: -5 });

    queue = await open(store, clock);
    try {
      expect(await queue.claim("w", 30_000)).toBeNull();
      const info = await queue.view().job(jobId);
      expect(info?.state).toBe("dead");
      expect(info?.lastError).toMatch(/^record_corrupted: .*its attempts -5 is not a whole number from 0 up/);
      expect(await queue.view().stats("w")).toMatchObject({ pending: 0, claimed: 0, dead: 1 });
    } finally {
      await queue.close();
    }
  });

  it("with a NaN due time while scheduled is set aside when its index entry comes due, and a cancel removes it", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    let queue = await open(store, clock);
    const due = await queue.enqueue("w", new Uint8Array([1]), { runAt: T0 + 60_000 });
    const cancelled = await queue.enqueue("w", new Uint8Array([2]), { runAt: T0 + 60_000 });
    await queue.close();
    await damage(store, due.jobId, { runAt: Number.NaN });
    await damage(store, cancelled.jobId, { runAt: Number.NaN });

    queue = await open(store, clock);
    try {
      expect(await viewed(queue, due.jobId)).toBeInstanceOf(JobRecordDamagedError);
      // A cancel removes the damaged job (it threw a ValidationError about an index time).
      expect(await queue.cancel(cancelled.jobId)).toBe(true);
      expect(await queue.view().job(cancelled.jobId)).toBeNull();
      expect(await queue.claim("w", 30_000)).toBeNull();
      clock.advance(60_000);
      expect(await queue.claim("w", 30_000)).toBeNull();
      const info = await queue.view().job(due.jobId);
      expect(info?.state).toBe("dead");
      expect(info?.lastError).toMatch(/^record_corrupted: .*its runAt NaN is not a time in ms/);
      expect(await queue.view().stats("w")).toMatchObject({ pending: 0, scheduled: 0, claimed: 0, dead: 1 });
    } finally {
      await queue.close();
    }
  });
});
