/**
 * @module Job records as a hostile store or another MessagePack writer may
 * hold them: every number field written in every integer width MessagePack
 * has (64-bit ones included, as other writers store a time past 2^32), and
 * records lacking a field every job holds or holding one of another kind.
 * Each integer reads as the number it holds, on the direct read, the
 * general decoder's and the defining one's (an index on a prototype); a
 * damaged record (a map header lying about its size among them) is a
 * StoreCorruptedError naming its key at decode; a claim sets its job aside
 * as dead (`record_corrupted`), the bytes' start kept in its last error.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, Queue, StoreCorruptedError, WriteBatch } from "taquba";
import { jobKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { decodeJob } from "../../runtime/queue/record.js";
import { underIndexes } from "../support/polluted-prototype.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const packed = (v: unknown) => new Uint8Array(general.pack(v));
const T0 = 1_764_000_000_000;

/** A MessagePack map of `entries`, each value given as its encoded bytes (a map16 header past 15 entries). */
function mapOf(entries: readonly (readonly [string, Uint8Array])[]): Uint8Array {
  const out: number[] = entries.length < 16 ? [0x80 | entries.length] : [0xde, entries.length >> 8, entries.length & 0xff];
  for (const [name, value] of entries) out.push(...packed(name), ...value);
  return new Uint8Array(out);
}

function bigEndian(v: bigint, bytes: number): number[] {
  const out: number[] = [];
  for (let i = bytes - 1; i >= 0; i--) out.push(Number((v >> BigInt(8 * i)) & 0xffn));
  return out;
}

/** Every MessagePack form that holds the integer `n` exactly, by name. */
function integerForms(n: number): [string, Uint8Array][] {
  const b = BigInt(n);
  const forms: [string, number[]][] = [];
  if (n >= 0 && n <= 0x7f) forms.push(["positive fixint", [n]]);
  if (n >= -32 && n < 0) forms.push(["negative fixint", [n & 0xff]]);
  if (n >= 0 && n <= 0xff) forms.push(["uint8", [0xcc, n]]);
  if (n >= 0 && n <= 0xffff) forms.push(["uint16", [0xcd, ...bigEndian(b, 2)]]);
  if (n >= 0 && n <= 0xffff_ffff) forms.push(["uint32", [0xce, ...bigEndian(b, 4)]]);
  if (n >= 0) forms.push(["uint64", [0xcf, ...bigEndian(b, 8)]]);
  if (n >= -128 && n <= 127) forms.push(["int8", [0xd0, n & 0xff]]);
  if (n >= -32768 && n <= 32767) forms.push(["int16", [0xd1, ...bigEndian(BigInt.asUintN(16, b), 2)]]);
  if (n >= -(2 ** 31) && n < 2 ** 31) forms.push(["int32", [0xd2, ...bigEndian(BigInt.asUintN(32, b), 4)]]);
  forms.push(["int64", [0xd3, ...bigEndian(BigInt.asUintN(64, b), 8)]]);
  const f64 = new Uint8Array(9);
  f64[0] = 0xcb;
  new DataView(f64.buffer).setFloat64(1, n);
  forms.push(["float64", [...f64]]);
  return forms.map(([name, bytes]) => [name, new Uint8Array(bytes)]);
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

/** `BASE`'s fields with `field` (added when BASE lacks it) written as `value`, and the fields in `extra`. */
function recordWith(field: string, value: Uint8Array, extra: Record<string, unknown> = {}): Uint8Array {
  const fields: Record<string, unknown> = { ...BASE, ...extra };
  const entries: [string, Uint8Array][] = Object.entries(fields).map(([k, v]) => [k, k === field ? value : packed(v)]);
  if (!(field in fields)) entries.push([field, value]);
  return mapOf(entries);
}

/** The three ways a record is decoded: directly, by the general decoder (a non-ASCII string sends it there), by the defining one (an index on a prototype). */
const PATHS: [string, (bytes: Uint8Array) => unknown, Record<string, unknown>][] = [
  ["read directly", (b) => decodeJob("j/x", b), {}],
  ["by the general decoder", (b) => decodeJob("j/x", b), { lastError: "é" }],
  ["by the defining decoder", (b) => underAnIndex(() => decodeJob("j/x", b)), {}],
];

/** What `read` returns while Array.prototype holds an index (the decoders then define every field), or what it threw, thrown again. */
function underAnIndex<T>(read: () => T): T {
  const { value, error } = underIndexes(Array.prototype, ["0"], { value: "planted", writable: true }, read);
  if (error !== undefined) throw error;
  return value as T;
}

const NUMBER_FIELDS = ["priority", "attempts", "maxAttempts", "enqueuedAt", "claimedAt", "runAt", "payloadSize", "retainUntil"];
const VALUES = [
  0,
  5,
  127,
  128,
  255,
  256,
  65535,
  65536,
  2 ** 32 - 1,
  2 ** 32,
  T0,
  Number.MAX_SAFE_INTEGER,
  -1,
  -32,
  -33,
  -129,
  -32769,
  -(2 ** 31) - 1,
  -(2 ** 40),
];

/** Whether a field holds `n`: every number field holds a whole number from 0 up, a priority at most 2^32-1, an attempt limit at least 1 (see job-record-ranges.test.ts). */
const holds = (field: string, n: number) => n >= 0 && (field !== "priority" || n <= 2 ** 32 - 1) && (field !== "maxAttempts" || n >= 1);

describe("job records holding integers of every MessagePack width", () => {
  it.each(PATHS)("reads each as the number it holds, or refuses one outside its field's range, %s", (_path, decode, extra) => {
    for (const field of NUMBER_FIELDS) {
      for (const n of VALUES) {
        for (const [form, bytes] of integerForms(n)) {
          const record = recordWith(field, bytes, extra);
          if (!holds(field, n)) {
            expect(() => decode(record), `${field} = ${n} as ${form}`).toThrow(new RegExp(`its ${field} ${n} is not a `));
            continue;
          }
          const rec = decode(record) as Record<string, unknown>;
          expect(rec[field], `${field} = ${n} as ${form}`).toBe(n);
          expect(typeof rec[field]).toBe("number");
        }
      }
    }
  });

  it.each(PATHS)("refuses a 64-bit integer no number holds exactly, naming the field, %s", (_path, decode, extra) => {
    for (const field of ["attempts", "enqueuedAt", "priority"]) {
      for (const big of [2n ** 53n, 2n ** 63n - 1n, 2n ** 64n - 1n]) {
        const bytes = recordWith(field, new Uint8Array([0xcf, ...bigEndian(big, 8)]), extra);
        expect(() => decode(bytes), `${field} = ${big}`).toThrow(StoreCorruptedError);
        expect(() => decode(bytes)).toThrow(new RegExp(`its ${field} ${big} is past the integers a number holds exactly`));
      }
      const negative = recordWith(field, new Uint8Array([0xd3, ...bigEndian(BigInt.asUintN(64, -(2n ** 60n)), 8)]), extra);
      expect(() => decode(negative)).toThrow(StoreCorruptedError);
    }
  });
});

/** Damage a record may hold, each with what the refusal says. */
const DAMAGE: [string, (r: Record<string, unknown>) => void, RegExp][] = [
  ["no attempt count", (r) => delete r.attempts, /lacks the job's attempts/],
  ["no attempt limit", (r) => delete r.maxAttempts, /lacks the job's maxAttempts/],
  ["no priority", (r) => delete r.priority, /lacks the job's priority/],
  ["no queue", (r) => delete r.queue, /lacks the job's queue/],
  ["no seq", (r) => delete r.seq, /lacks the job's seq/],
  ["no enqueue time", (r) => delete r.enqueuedAt, /lacks the job's enqueuedAt/],
  ["an attempt count as text", (r) => (r.attempts = "0"), /its attempts is not a number/],
  ["a null attempt count", (r) => (r.attempts = null), /its attempts is not a number/],
  ["a NaN attempt count", (r) => (r.attempts = Number.NaN), /attempt count or limit is not a whole number/],
  ["a fractional attempt limit", (r) => (r.maxAttempts = 2.5), /attempt count or limit is not a whole number/],
  ["a priority as text", (r) => (r.priority = "high"), /its priority is not a number/],
  ["a payload as text", (r) => (r.payload = "abc"), /its payload is not bytes/],
  ["attached bytes as a number", (r) => (r.attached = 7), /its attached is not bytes/],
  ["headers as a list", (r) => (r.headers = ["a"]), /its headers is not a map of strings/],
  ["a header holding a number", (r) => (r.headers = { a: 1 }), /its headers is not a map of strings/],
  ["a state no job is in", (r) => (r.state = "bogus"), /its state is none a job is stored in/],
  ["a cancel flag as text", (r) => (r.cancelRequested = "yes"), /its cancelRequested is not true or false/],
  ["a last error as a number", (r) => (r.lastError = 5), /its lastError is not a string/],
  // A run's end token names the count: one below 0, fractional or past exact integers would repeat an earlier end's.
  ["a negative requeue count", (r) => (r.requeues = -1), /its requeue count is not a whole number from 0 up/],
  ["a fractional requeue count", (r) => (r.requeues = 1.5), /its requeue count is not a whole number from 0 up/],
  ["a NaN requeue count", (r) => (r.requeues = Number.NaN), /its requeue count is not a whole number from 0 up/],
  ["an infinite requeue count", (r) => (r.requeues = Number.POSITIVE_INFINITY), /its requeue count is not a whole number from 0 up/],
  ["a requeue count past exact integers", (r) => (r.requeues = 2 ** 53), /its requeue count is not a whole number from 0 up/],
];

describe("damaged job records", () => {
  it.each(PATHS)("are refused at decode naming the key and the field, %s", (_path, decode, extra) => {
    for (const [what, damage, says] of DAMAGE) {
      const rec: Record<string, unknown> = { ...BASE, ...extra };
      damage(rec);
      const bytes = packed(rec);
      let err: unknown;
      try {
        decode(bytes);
      } catch (e) {
        err = e;
      }
      expect(err, what).toBeInstanceOf(StoreCorruptedError);
      expect((err as StoreCorruptedError).objectKey, what).toBe("j/x");
      expect((err as Error).message, what).toMatch(says);
    }
  });

  it.each(PATHS)("are refused at decode when the map's header lies about its size, %s", (_path, decode, extra) => {
    // An optional field last: a header one entry short leaves out no field every job holds.
    const fields = Object.entries({ ...BASE, ...extra, retainUntil: T0 }).map(([k, v]) => [k, packed(v)] as const);
    const whole = mapOf(fields);
    const body = whole.subarray(1);
    const n = fields.length;
    const lying = [
      ["one entry fewer", new Uint8Array([0x80 | (n - 1), ...body])],
      ["one entry more", new Uint8Array([0x80 | (n + 1), ...body])],
      ["a map16 of 65,535 entries", new Uint8Array([0xde, 0xff, 0xff, ...body])],
      ["a map32 of 2^32-1 entries", new Uint8Array([0xdf, 0xff, 0xff, 0xff, 0xff, ...body])],
      ["a map of none", new Uint8Array([0x80, ...body])],
    ] as const;
    expect(() => decode(whole)).not.toThrow();
    for (const [what, bytes] of lying) expect(() => decode(bytes), what).toThrow(StoreCorruptedError);
  });

  it("are set aside as dead at a claim, their bytes' start kept; a record of 64-bit integers is claimed and acked", async () => {
    for (const [what, damage, says] of [...DAMAGE, ["64-bit integers", undefined, undefined] as const]) {
      const store = new MemoryStore();
      const clock = new MockClock(T0);
      let queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
      const { jobId } = await queue.enqueue("w", new Uint8Array([1, 2, 3]), { priority: 5 });
      await queue.close();
      // The store rewritten under the queue, as a hostile store or another writer would.
      const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
      const rec = general.unpack(engine.get(jobKey(jobId))!) as Record<string, unknown>;
      let bytes: Uint8Array;
      if (damage !== undefined) {
        damage(rec);
        bytes = packed(rec);
      } else {
        bytes = mapOf(
          Object.entries(rec).map(([k, v]) => [k, typeof v === "number" ? new Uint8Array([0xcf, ...bigEndian(BigInt(v), 8)]) : packed(v)] as const),
        );
      }
      await engine.commit(new WriteBatch().put(jobKey(jobId), bytes));
      await engine.close();

      queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
      try {
        if (says === undefined) {
          const job = await queue.claim("w", 30_000);
          expect(job?.id).toBe(jobId);
          expect([job?.priority, job?.enqueuedAt, job?.attempt, job?.maxAttempts]).toEqual([5, T0, 1, 3]);
          await queue.ack(job!);
          expect(await queue.view().stats("w")).toMatchObject({ pending: 0, claimed: 0, done: 1 });
          continue;
        }
        // Set aside as dead, the damage named in its last error, rather than stopping every claim of the queue.
        expect(await queue.claim("w", 30_000), what).toBeNull();
        const info = await queue.view().job(jobId);
        expect(info?.state, what).toBe("dead");
        expect(info?.lastError, what).toMatch(says);
        expect(info?.lastError, what).toMatch(/^record_corrupted: /);
        expect(await queue.view().stats("w"), what).toMatchObject({ pending: 0, claimed: 0, dead: 1 });
      } finally {
        await queue.close();
      }
      const after = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
      // The damaged bytes' start is kept in the dead record's last error.
      expect(decodeJob(jobKey(jobId), after.get(jobKey(jobId))!).lastError, what).toContain(Buffer.from(bytes.subarray(0, 32)).toString("hex"));
      await after.close();
    }
  });
});
