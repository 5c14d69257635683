/**
 * @module Job records read directly (record-read.ts): `decodeJob` gives the
 * general decoder's record (the same fields in the same order, the same
 * values) for records of every shape (random, seeded), reading the usual
 * ones itself and leaving the rest to the general decoder.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "../../runtime/errors.js";
import { decodeJob, encodeJob, type JobRecord } from "../../runtime/queue/record.js";
import { readJobRecord } from "../../runtime/queue/record-read.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { jobNumbersInRange } from "./helpers.js";

// The record codec's general encoder and decoder, with the record codec's options.
const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const generalBytes = (v: unknown) => new Uint8Array(general.pack(v));

/** What the general decoder makes of `bytes`, with byte fields as plain Uint8Array views, as `decodeJob` hands them out. */
function generalRecord(bytes: Uint8Array): Record<string, unknown> {
  const o = general.unpack(bytes.slice()) as Record<string, unknown>;
  const view = (v: unknown) => (v instanceof Uint8Array ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(0));
  o.payload = view(o.payload);
  if (o.attached !== undefined) o.attached = view(o.attached);
  return o;
}

/** `a` and `b` hold the same fields in the same order, their headers too, with equal values. */
function expectSameRecord(a: object, b: object, what: string): void {
  expect(Object.keys(a), what).toEqual(Object.keys(b));
  const ha = (a as { headers?: object }).headers;
  const hb = (b as { headers?: object }).headers;
  if (ha !== undefined && hb !== undefined) expect(Object.keys(ha), what).toEqual(Object.keys(hb));
  // Byte fields apart: the deep equality compares an array one element at a time (records of 70,000 bytes took minutes).
  const [sa, sb] = [splitBytes(a), splitBytes(b)];
  expect(sa.rest, what).toEqual(sb.rest);
  expect(Object.keys(sa.bytes), what).toEqual(Object.keys(sb.bytes));
  for (const [k, x] of Object.entries(sa.bytes)) {
    const y = sb.bytes[k]!;
    expect(Object.prototype.toString.call(x), `${what}: ${k}`).toBe(Object.prototype.toString.call(y));
    expect(Buffer.compare(x, y), `${what}: ${k}`).toBe(0);
  }
  expect(Object.getPrototypeOf(a)).toBe(Object.prototype);
}

/** `o`'s fields holding byte arrays, and the others. */
function splitBytes(o: object): { bytes: Record<string, Uint8Array>; rest: Record<string, unknown> } {
  const bytes: Record<string, Uint8Array> = {};
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v instanceof Uint8Array) bytes[k] = v;
    else rest[k] = v;
  }
  return { bytes, rest };
}

const NON_ASCII = ["é", "中", "😀", "\u0080", "\ud800"];

function text(r: TestRandom): string {
  const n = r.random() < 0.95 ? r.int(40) : [0, 31, 32, 255, 256, 70000][r.int(6)]!;
  const run: string[] = [];
  for (let i = 0; i < Math.min(n, 200); i++) run.push(String.fromCharCode(32 + r.int(95)));
  const s = run
    .join("")
    .repeat(Math.ceil(n / Math.max(1, run.length)))
    .slice(0, n);
  // Now and then a character the direct reader leaves to the general decoder.
  return r.random() < 0.05 ? s + NON_ASCII[r.int(NON_ASCII.length)]! : s;
}

function num(r: TestRandom): number {
  const picks = [0, -0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, -1, -32, -33, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1];
  const more = [1.5, -2.25, Number.NaN, Number.POSITIVE_INFINITY, 1_764_000_000_000 + r.int(1e9), Number.MAX_SAFE_INTEGER, 1e30];
  const all = [...picks, ...more];
  // Mostly within every field's range (see `jobNumbersInRange`), so most records are read directly.
  return r.random() < 0.9 ? 1 + r.int(2 ** 20) : all[r.int(all.length)]!;
}

function bytes(r: TestRandom): Uint8Array {
  const n = r.random() < 0.95 ? r.int(300) : [0, 255, 256, 65535, 65536, 70000][r.int(6)]!;
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = r.int(256);
  return b;
}

function record(r: TestRandom): JobRecord {
  const maybe = <T>(make: () => T): T | undefined => (r.random() < 0.5 ? make() : undefined);
  const headers = maybe(() => {
    const h: Record<string, string> = {};
    const n = r.random() < 0.8 ? r.int(5) : 14 + r.int(6);
    for (let i = 0; i < n; i++) h[text(r) || `k${i}`] = text(r);
    return h;
  });
  const fields: [keyof JobRecord, () => unknown][] = [
    ["id", () => text(r)],
    ["queue", () => text(r)],
    ["state", () => (["pending", "scheduled", "claimed", "done", "dead"] as const)[r.int(5)]],
    ["seq", () => text(r)],
    ["priority", () => num(r)],
    ["payload", () => bytes(r)],
    ["payloadRef", () => maybe(() => text(r))],
    ["payloadSize", () => maybe(() => num(r))],
    ["headers", () => headers],
    ["attempts", () => num(r)],
    // Mostly a count as the queue writes it; now and then any number (damage, refused).
    ["requeues", () => maybe(() => (r.random() < 0.8 ? r.int(2 ** 20) : num(r)))],
    ["maxAttempts", () => num(r)],
    ["enqueuedAt", () => num(r)],
    ["claimedAt", () => maybe(() => num(r))],
    ["runAt", () => maybe(() => num(r))],
    ["wokenAt", () => maybe(() => num(r))],
    ["attached", () => maybe(() => bytes(r))],
    ["completedAt", () => maybe(() => num(r))],
    ["failedAt", () => maybe(() => num(r))],
    ["lastError", () => maybe(() => text(r))],
    ["dedupKey", () => maybe(() => text(r))],
    ["debounceKey", () => maybe(() => text(r))],
    ["cancelRequested", () => maybe(() => r.random() < 0.5)],
    ["retainUntil", () => maybe(() => num(r))],
  ];
  // Fields in any order, as records written by other transitions or versions have them.
  if (r.random() < 0.5) fields.sort(() => r.random() - 0.5);
  const rec: Record<string, unknown> = {};
  for (const [k, make] of fields) rec[k] = make();
  return rec as unknown as JobRecord;
}

describe("decodeJob reading job records directly", () => {
  it("gives the general decoder's record for random records (seeded), written by either encoder", { timeout: HEAVY_TEST_MS }, () => {
    const r = testRandom("record-read");
    let direct = 0;
    let held = 0;
    for (let i = 0; i < 400; i++) {
      const rec = record(r);
      for (const b of [encodeJob(rec), generalBytes(rec)]) {
        if (readJobRecord(b) !== undefined) direct++;
        const general = generalRecord(b);
        if (jobNumbersInRange(general)) held++;
        // A count that is no whole number (a float, NaN or an infinity num gives), or a requeue count below 0 or past exact integers, is a damaged record, refused.
        if (!Number.isInteger(general.attempts) || !Number.isInteger(general.maxAttempts)) {
          expect(() => decodeJob("j/x", b), `record ${i} of seed ${r.seed}`).toThrow(/attempt count or limit is not a whole number/);
        } else if (general.requeues !== undefined && !(Number.isSafeInteger(general.requeues) && (general.requeues as number) >= 0)) {
          expect(() => decodeJob("j/x", b), `record ${i} of seed ${r.seed}`).toThrow(/its requeue count is not a whole number from 0 up/);
        } else if (!jobNumbersInRange(general)) {
          expect(() => decodeJob("j/x", b), `record ${i} of seed ${r.seed}`).toThrow(/its [a-zA-Z]+ .* is not a /);
        } else expectSameRecord(decodeJob("j/x", b), general, `record ${i} of seed ${r.seed}`);
      }
    }
    // Most of those whose numbers are in range are read directly; the rest (a non-ASCII string, a 64-bit or 32-bit float number) the general way.
    expect(direct).toBeGreaterThan(held / 2);
    expect(held).toBeGreaterThan(200);
  });

  it("reads a usual record without touching the array it is given (the general decoder attaches a DataView to it)", () => {
    const rec: JobRecord = {
      id: "01JD0000000000000000000000",
      queue: "steps",
      state: "claimed",
      seq: "01JD0000000000000000000000",
      priority: 0,
      payload: new Uint8Array([1, 2, 3]),
      headers: { "workflow.run_id": "r1", "workflow.step": "3" },
      attempts: 1,
      maxAttempts: 3,
      enqueuedAt: 1_764_000_000_123,
      claimedAt: 1_764_000_000_124,
    };
    const b = encodeJob(rec);
    const back = decodeJob("j/x", b);
    expect(Object.getOwnPropertyNames(b).filter((k) => !/^\d+$/.test(k))).toEqual([]);
    expectSameRecord(back, rec, "the usual record");
    // The payload is a view of the bytes read, as the general decoder's is.
    expect(back.payload.buffer).toBe(b.buffer);
  });

  it("leaves to the general decoder what it does not read itself, with the same record or the same refusal", () => {
    const base = { id: "a", queue: "q", state: "pending", seq: "s", priority: 0, payload: new Uint8Array([1]), attempts: 0, maxAttempts: 1, enqueuedAt: 5 };
    const odd: [string, Uint8Array][] = [
      ["a field this version does not know", generalBytes({ ...base, later: "x" })],
      ["a non-ASCII string", generalBytes({ ...base, lastError: "é" })],
      ["a non-ASCII header", generalBytes({ ...base, headers: { k: "中" } })],
      ["a header named __proto__", generalBytes({ ...base, headers: JSON.parse('{"__proto__": "x", "k": "v"}') })],
      ["a header named as a field of Object.prototype", generalBytes({ ...base, headers: { constructor: "x" } })],
    ];
    // A field given twice: the map's header counts one entry more, and the field comes again at the end.
    const once = generalBytes(base);
    const twice = new Uint8Array([...once, 0xa2, 0x69, 0x64, 0xa1, 0x62]);
    twice[0] = twice[0]! + 1;
    odd.push(["a field given twice", twice]);
    // A float32: the same record with its enqueuedAt (a positive fixint, 5) written as a 32-bit float.
    const at = once.indexOf(5, once.length - 2);
    const f32 = new Uint8Array([...once.subarray(0, at), 0xca, 0x40, 0xa0, 0x00, 0x00]);
    odd.push(["a 32-bit float", f32]);
    for (const [what, b] of odd) {
      expect(readJobRecord(b), what).toBeUndefined();
      expectSameRecord(decodeJob("j/x", b), generalRecord(b), what);
    }
    // A 64-bit integer, as another MessagePack writer stores a time past 2^32, is read directly as the number it holds.
    const u64 = new Uint8Array([...once.subarray(0, at), 0xcf, 0, 0, 0, 0, 0, 0, 0, 5]);
    expectSameRecord(decodeJob("j/x", u64), { ...base, payload: new Uint8Array([1]) }, "a 64-bit integer");
    expect(readJobRecord(u64)).toBeDefined();
    // A field of another kind is a damaged record, refused (read as it was, null or text went out as the job's).
    for (const b of [generalBytes({ ...base, runAt: null }), generalBytes({ ...base, priority: "1" })]) {
      expect(readJobRecord(b)).toBeUndefined();
      expect(() => decodeJob("j/x", b)).toThrow(StoreCorruptedError);
    }
    // Bytes after the record, and a cut record: refused as the general decoder refuses them.
    for (const b of [new Uint8Array([...once, 0x01]), once.subarray(0, once.length - 1)]) {
      expect(readJobRecord(b)).toBeUndefined();
      let general: unknown;
      try {
        general = generalRecord(b);
      } catch (err) {
        general = err;
      }
      if (general instanceof Error) expect(() => decodeJob("j/x", b)).toThrow(StoreCorruptedError);
      else expectSameRecord(decodeJob("j/x", b), general as object, "bytes after the record");
    }
  });
});
