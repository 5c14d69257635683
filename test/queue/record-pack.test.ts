/**
 * @module The job record's direct encoder writes the very bytes the general
 * MessagePack encoder writes, for records of every shape (random, seeded),
 * and hands records it does not cover back to the general encoder.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { copyJob, decodeJob, encodeJob, type JobRecord } from "../../runtime/queue/record.js";
import { packPlain, packRecord, textBytes } from "../../runtime/queue/record-pack.js";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { jobNumbersInRange } from "./helpers.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { bytes, num, text } from "./random-record-values.js";

// The record codec's general encoder, with the record codec's options.
const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const generalBytes = (v: unknown) => new Uint8Array(general.pack(v));
// The workflow records' general encoder, with their codec's options (no value skipping: every map gets a 16-bit count).
const plainGeneral = new Packr({ useRecords: false, moreTypes: false });
const plainGeneralBytes = (v: unknown) => new Uint8Array(plainGeneral.pack(v));

/**
 * A random record. With `validHeaderNames`, header names are well formed, as
 * every submission checks (headers.ts): two names differing only in lone
 * surrogates both decode as U+FFFD, so they could not round-trip.
 */
function record(r: TestRandom, validHeaderNames = false): JobRecord {
  const maybe = <T>(make: () => T): T | undefined => (r.random() < 0.5 ? make() : undefined);
  const headerName = (i: number) => {
    const name = text(r) || `k${i}`;
    return validHeaderNames ? (name as string & { toWellFormed(): string }).toWellFormed() : name;
  };
  const headers = maybe(() => {
    const h: Record<string, string> = {};
    const n = r.random() < 0.8 ? r.int(5) : 14 + r.int(6);
    for (let i = 0; i < n; i++) h[headerName(i)] = text(r);
    return h;
  });
  const rec: JobRecord = {
    id: text(r),
    queue: text(r),
    state: (["pending", "scheduled", "claimed", "done", "dead"] as const)[r.int(5)]!,
    seq: text(r),
    priority: num(r),
    payload: bytes(r),
    payloadRef: maybe(() => text(r)),
    payloadSize: maybe(() => num(r)),
    headers,
    attempts: num(r),
    requeues: maybe(() => num(r)),
    maxAttempts: num(r),
    enqueuedAt: num(r),
    claimedAt: maybe(() => num(r)),
    runAt: maybe(() => num(r)),
    wokenAt: maybe(() => num(r)),
    attached: maybe(() => bytes(r)),
    lastError: maybe(() => text(r)),
    dedupKey: maybe(() => text(r)),
    cancelRequested: maybe(() => r.random() < 0.5),
    retainUntil: maybe(() => num(r)),
  };
  // Fields in another order, as a decoded or copied record may have them.
  return r.random() < 0.3 ? copyJob(rec) : rec;
}

describe("packRecord: the job record written directly", () => {
  it("writes the general encoder's bytes for random records (seeded)", { timeout: HEAVY_TEST_MS }, () => {
    const r = testRandom("record-pack");
    for (let i = 0; i < 1500; i++) {
      const rec = record(r);
      const direct = packRecord(rec);
      expect(direct, `record ${i} of seed ${r.seed}`).toBeDefined();
      expect(Buffer.from(direct!).equals(Buffer.from(generalBytes(rec))), `record ${i} of seed ${r.seed}`).toBe(true);
    }
  });

  it("returns arrays of their own: a later record does not change an earlier one's bytes", () => {
    const a = packRecord({ id: "a", payload: new Uint8Array([1, 2, 3]) })!;
    const copy = a.slice();
    packRecord({ id: "bbbbbbbbbbbbbbbb", payload: new Uint8Array(100_000) });
    expect(a).toEqual(copy);
    expect(a.buffer.byteLength).toBe(a.byteLength);
  });

  it("shares one chunk between shared encodings, each its own bytes, whatever is encoded after (seeded)", { timeout: HEAVY_TEST_MS }, () => {
    const r = testRandom("record-pack shared");
    // Records of every shape: many cross the end of a chunk part way, which moves what was written so far.
    const made: { out: Uint8Array; bytes: Uint8Array }[] = [];
    for (let i = 0; i < 1500; i++) {
      const rec = record(r);
      const out = packRecord(rec, true)!;
      const bytes = generalBytes(rec);
      expect(Buffer.from(out).equals(Buffer.from(bytes)), `record ${i} of seed ${r.seed}`).toBe(true);
      made.push({ out, bytes });
      // Owned encodings and refused ones in between write from where the next shared one starts.
      if (i % 7 === 0) packRecord(record(r));
      if (i % 11 === 0) packRecord({ id: "x", extra: [1] });
      if (i % 13 === 0) packPlain({ filler: "y".repeat(r.int(300)) });
    }
    for (const [i, { out, bytes }] of made.entries()) expect(Buffer.from(out).equals(Buffer.from(bytes)), `record ${i} of seed ${r.seed}`).toBe(true);
    // Small ones are views, back to back in one chunk: no array buffer of their own.
    const a = packRecord({ id: "a", payload: new Uint8Array([1]) }, true)!;
    const b = packRecord({ id: "b", payload: new Uint8Array([2]) }, true)!;
    expect(a.buffer.byteLength).toBeGreaterThan(a.byteLength);
    if (a.buffer === b.buffer) expect(b.byteOffset).toBe(a.byteOffset + a.byteLength);
    // A large one is an array of its own, so it keeps no chunk alive and no chunk keeps it.
    const large = packRecord({ id: "c", payload: new Uint8Array(5000) }, true)!;
    expect(large.buffer.byteLength).toBe(large.byteLength);
  });

  it("hands values it does not cover to the general encoder, which encodeJob then uses", () => {
    const odd: unknown[] = [null, [1, 2], new Date(0), Buffer.from([1]), new Uint16Array([1]), { nested: { deeper: "x" } }, { n: 1 }, 10n];
    for (const v of odd) {
      const rec = {
        id: "j",
        queue: "q",
        state: "pending",
        seq: "s",
        priority: 0,
        payload: new Uint8Array(0),
        attempts: 0,
        maxAttempts: 1,
        enqueuedAt: 1,
        extra: v,
      };
      expect(packRecord(rec), String(v)).toBeUndefined();
      expect(encodeJob(rec as unknown as JobRecord)).toEqual(generalBytes(rec));
    }
  });

  it("round-trips through decodeJob", { timeout: HEAVY_TEST_MS }, () => {
    const r = testRandom("record-pack round trip");
    let roundTripped = 0;
    for (let i = 0; i < 1200; i++) {
      const rec = record(r, true);
      // A count that is no whole number (a float, NaN or an infinity num gives) is a damaged record, refused.
      if (!Number.isInteger(rec.attempts) || !Number.isInteger(rec.maxAttempts)) {
        expect(() => decodeJob("j/x", encodeJob(rec)), `record ${i} of seed ${r.seed}`).toThrow(/attempt count or limit is not a whole number/);
        continue;
      }
      if (rec.requeues !== undefined && !(Number.isSafeInteger(rec.requeues) && rec.requeues >= 0)) {
        expect(() => decodeJob("j/x", encodeJob(rec)), `record ${i} of seed ${r.seed}`).toThrow(/its requeue count is not a whole number from 0 up/);
        continue;
      }
      if (!jobNumbersInRange(rec as unknown as Record<string, unknown>)) {
        expect(() => decodeJob("j/x", encodeJob(rec)), `record ${i} of seed ${r.seed}`).toThrow(/its [a-zA-Z]+ .* is not a /);
        continue;
      }
      const back = decodeJob("j/x", encodeJob(rec));
      roundTripped++;
      expect(Buffer.from(encodeJob(back)).equals(Buffer.from(encodeJob(rec))), `record ${i} of seed ${r.seed}`).toBe(true);
    }
    // Most random records hold a number out of range: enough others to round-trip.
    expect(roundTripped).toBeGreaterThan(80);
  });
});

/**
 * A random plain value: maps (up to 20 entries) and arrays (up to 20 items)
 * nested to `depth`, and every scalar kind. With `wellFormedKeys`, map keys
 * have no lone surrogates (two keys differing only in those decode alike).
 */
function plain(r: TestRandom, wellFormedKeys = false, depth = 3): unknown {
  const k = r.int(depth > 0 ? 8 : 6);
  if (k === 0) return text(r);
  if (k === 1) return num(r);
  if (k === 2) return r.random() < 0.5;
  if (k === 3) return null;
  if (k === 4) return bytes(r);
  if (k === 5) return r.int(2 ** 20);
  const n = r.random() < 0.8 ? r.int(5) : 15 + r.int(6);
  if (k === 6) return Array.from({ length: n }, () => plain(r, wellFormedKeys, depth - 1));
  const o: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const key = text(r) || `k${i}`;
    o[wellFormedKeys ? (key as string & { toWellFormed(): string }).toWellFormed() : key] = plain(r, wellFormedKeys, depth - 1);
  }
  return o;
}

describe("packPlain: plain data written as the workflow records' encoder writes it", () => {
  it("writes the general encoder's bytes for random values (seeded)", () => {
    const r = testRandom("plain-pack");
    for (let i = 0; i < 1500; i++) {
      const v = plain(r);
      const direct = packPlain(v);
      expect(direct, `value ${i} of seed ${r.seed}`).toBeDefined();
      expect(Buffer.from(direct!).equals(Buffer.from(plainGeneralBytes(v))), `value ${i} of seed ${r.seed}`).toBe(true);
    }
  });

  it("writes a step's history entry and step pointer as the general encoder does", () => {
    const entry = {
      s: 3,
      b: 4,
      a: [[1, 1_764_000_000_000, 1_764_000_000_003, "continued"]],
      n: "charge",
      tr: { kind: "immediate" },
      nx: new Uint8Array([1, 2]),
    };
    const pointer = { step: 4, jobId: "01KBE3Y6QGZ8W4XJ0SZ4Z6TABC" };
    for (const v of [entry, pointer]) expect(encodeValue(v)).toEqual(plainGeneralBytes(v));
  });

  it("hands values it does not cover to the general encoder, which encodeValue then uses", () => {
    const odd: unknown[] = [
      undefined,
      { a: undefined },
      [undefined],
      new Date(0),
      Buffer.from([1]),
      new Uint16Array([1]),
      new Map([["a", 1]]),
      { hasOwnProperty: 1 },
      10n,
    ];
    for (const v of odd) {
      expect(packPlain({ x: v }), String(v)).toBeUndefined();
      expect(encodeValue({ x: v })).toEqual(plainGeneralBytes({ x: v }));
    }
  });

  it("returns arrays of their own, and round-trips through decodeValue", () => {
    const a = packPlain({ id: "a", payload: new Uint8Array([1, 2, 3]) })!;
    const copy = a.slice();
    packPlain({ id: "bbbbbbbbbbbbbbbb", payload: new Uint8Array(100_000) });
    expect(a).toEqual(copy);
    expect(a.buffer.byteLength).toBe(a.byteLength);
    const r = testRandom("plain-pack round trip");
    for (let i = 0; i < 200; i++) {
      const v = plain(r, true);
      expect(Buffer.from(encodeValue(decodeValue(encodeValue(v)))).equals(Buffer.from(encodeValue(v))), `value ${i} of seed ${r.seed}`).toBe(true);
    }
  });
});

/** Every field of a job record, in the order its copies list them. */
const JOB_FIELD_ORDER: readonly (keyof JobRecord)[] = [
  "id",
  "queue",
  "state",
  "seq",
  "priority",
  "payload",
  "payloadRef",
  "payloadSize",
  "headers",
  "attempts",
  "requeues",
  "maxAttempts",
  "enqueuedAt",
  "claimedAt",
  "runAt",
  "wokenAt",
  "attached",
  "completedAt",
  "failedAt",
  "lastError",
  "dedupKey",
  "debounceKey",
  "cancelRequested",
  "retainUntil",
];

describe("copyJob", () => {
  const base: JobRecord = {
    id: "j",
    queue: "q",
    state: "claimed",
    seq: "s",
    priority: 0,
    payload: new Uint8Array([1]),
    headers: { a: "b" },
    attempts: 1,
    maxAttempts: 3,
    enqueuedAt: 1,
    claimedAt: 2,
  };

  it("copies every field, and the copy encodes to the same record", () => {
    const c = copyJob(base);
    expect(c).not.toBe(base);
    expect(decodeJob("j/j", encodeJob(c))).toEqual(base);
  });

  it("is a plain object with every field in the record's order, written as a literal copy is (seeded)", () => {
    const r = testRandom("copyJob plain");
    for (let i = 0; i < 300; i++) {
      const rec = record(r);
      const c = copyJob(rec);
      expect(Object.getPrototypeOf(c), `record ${i} of seed ${r.seed}`).toBe(Object.prototype);
      expect(Object.keys(c), `record ${i} of seed ${r.seed}`).toEqual(JOB_FIELD_ORDER);
      for (const k of JOB_FIELD_ORDER) expect(c[k], `field ${k} of record ${i} of seed ${r.seed}`).toBe(rec[k]);
      // A literal with the same fields in the same order: the direct and the general encoder write it alike.
      const literal: Record<string, unknown> = {};
      for (const k of JOB_FIELD_ORDER) literal[k] = rec[k];
      const bytes = generalBytes(literal);
      expect(Buffer.from(encodeJob(c)).equals(Buffer.from(bytes)), `record ${i} of seed ${r.seed}`).toBe(true);
      expect(Buffer.from(generalBytes(c)).equals(Buffer.from(bytes)), `record ${i} of seed ${r.seed}`).toBe(true);
    }
  });

  it("keeps fields a later version wrote into a stored record, through copies", () => {
    const stored = general.pack({ ...base, fromLater: "kept", laterMap: { x: 1 } });
    const decoded = decodeJob("j/j", new Uint8Array(stored));
    const copied = copyJob(copyJob(decoded));
    copied.state = "pending";
    const back = decodeJob("j/j", encodeJob(copied)) as JobRecord & { fromLater?: string; laterMap?: unknown };
    expect(back.fromLater).toBe("kept");
    expect(back.laterMap).toEqual({ x: 1 });
    expect(back.state).toBe("pending");
  });
});

describe("textBytes", () => {
  it("writes TextEncoder's bytes, for ASCII ids and any other text (seeded)", () => {
    const r = testRandom("textBytes");
    const te = new TextEncoder();
    for (const fixed of ["", "01KBE3Y6QGZ8W4XJ0SZ4Z6TABC", "\u007f", "\u0080", "é", "😀", "\ud800", "a\udfffb"])
      expect(textBytes(fixed)).toEqual(te.encode(fixed));
    for (let i = 0; i < 1000; i++) {
      const s = text(r);
      expect(Buffer.from(textBytes(s)).equals(te.encode(s)), `string ${i} of seed ${r.seed}`).toBe(true);
    }
  });
});
