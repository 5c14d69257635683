/**
 * @module The inserted job record laid out whole (`encodeInsertedJob`'s
 * direct layout) writes the general encoder's bytes for random records of
 * every field kind in the insert literal's order: ASCII and other text of
 * every length class, numbers of every MessagePack form and none, byte
 * strings of every size, header maps of every size and kind, absent
 * optional fields, values of other kinds. Records fall anywhere in the
 * shared chunk (its end included), and no record's bytes change what an
 * earlier record handed out. Those in range decode back to the record.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { encodeInsertedJob } from "../../runtime/queue/inserted-record.js";
import { decodeJob, type JobRecord } from "../../runtime/queue/record.js";
import { packRecord } from "../../runtime/queue/record-pack.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { jobNumbersInRange } from "./helpers.js";
import { bytes, num as anyNumber, text } from "./random-record-values.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

/** A ULID-like id: the ASCII text most records hold. */
function ulid(r: TestRandom): string {
  const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  let s = "";
  for (let i = 0; i < 26; i++) s += alphabet[r.int(32)];
  return s;
}

/** Text of any kind, ULIDs most often (the usual record). */
function anyText(r: TestRandom): string {
  return r.random() < 0.4 ? ulid(r) : text(r);
}

/** Now and then a value of another kind than the field holds. */
function odd(r: TestRandom): unknown {
  return [null, true, 7, "7", { a: "b" }, [1], Buffer.from([1, 2]), new Uint16Array(2), 10n][r.int(9)];
}

function headers(r: TestRandom): unknown {
  const k = r.random();
  if (k < 0.15) return undefined;
  if (k < 0.2) return odd(r);
  const h: Record<string, unknown> = {};
  const n = r.random() < 0.8 ? r.int(5) : 14 + r.int(4);
  for (let i = 0; i < n; i++) {
    const name = r.random() < 0.5 ? `workflow.h${i}` : text(r) || `k${i}`;
    const v = r.random();
    h[name] = v < 0.03 ? odd(r) : v < 0.06 ? undefined : r.random() < 0.3 ? ulid(r) : text(r);
  }
  return r.random() < 0.5 ? Object.freeze(h) : h;
}

/** A record with `insertJobRecord`'s keys in its literal's order, `claimedAt` assigned last; any field may be absent or of another kind. */
function insertedRecord(r: TestRandom): JobRecord {
  // A usual record: every number a whole one in range, no value of another kind.
  const usual = r.random() < 0.4;
  const field = (make: () => unknown, absent = 0.1) => {
    const k = r.random();
    return k < absent ? undefined : !usual && k < absent + 0.03 ? odd(r) : make();
  };
  const num = (rr: TestRandom) => (usual ? 1 + rr.int(2 ** 31) : anyNumber(rr));
  const payload = () => (r.random() < 0.6 ? new Uint8Array(r.int(70)).map(() => r.int(256)) : bytes(r));
  const rec = {
    id: field(() => anyText(r), 0.02),
    queue: field(() => (r.random() < 0.5 ? "workflow-steps" : text(r)), 0.02),
    state: field(() => ["pending", "scheduled", "claimed", "done", "dead"][r.int(5)], 0.02),
    seq: field(() => anyText(r), 0.02),
    priority: field(() => num(r), 0.02),
    payload: field(payload, 0.02),
    payloadRef: field(() => anyText(r), 0.7),
    payloadSize: field(() => num(r), 0.7),
    headers: headers(r),
    attempts: field(() => num(r), 0.02),
    maxAttempts: field(() => num(r), 0.02),
    enqueuedAt: field(() => num(r), 0.02),
    runAt: field(() => num(r), 0.7),
    dedupKey: field(() => anyText(r), 0.7),
    debounceKey: field(() => anyText(r), 0.7),
  } as Record<string, unknown>;
  if (r.random() < 0.6) rec.claimedAt = field(() => num(r), 0);
  return rec as unknown as JobRecord;
}

/** Whether `s` holds no lone surrogate (one decodes as U+FFFD, so it cannot read back as it was). */
const wellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();

/** Whether the general decoder reads `rec` back as it is: every field of the kind and range a job record holds. */
function readsBack(rec: JobRecord): boolean {
  const o = rec as unknown as Record<string, unknown>;
  const texts = ["id", "queue", "seq", "payloadRef", "dedupKey", "debounceKey"];
  const isText = (v: unknown) => typeof v === "string" && wellFormed(v);
  const headersOk =
    rec.headers === undefined ||
    (typeof rec.headers === "object" &&
      rec.headers !== null &&
      Object.getPrototypeOf(rec.headers) === Object.prototype &&
      Object.entries(rec.headers).every(([k, v]) => wellFormed(k) && k !== "__proto__" && (v === undefined || isText(v))));
  return (
    texts.every((f) => o[f] === undefined || isText(o[f])) &&
    ["pending", "scheduled", "claimed", "done", "dead"].includes(rec.state) &&
    rec.payload instanceof Uint8Array &&
    rec.payload.constructor === Uint8Array &&
    headersOk &&
    rec.id !== undefined &&
    rec.queue !== undefined &&
    rec.seq !== undefined &&
    [rec.attempts, rec.maxAttempts, rec.enqueuedAt, rec.priority].every((v) => v !== undefined) &&
    Number.isInteger(rec.attempts) &&
    Number.isInteger(rec.maxAttempts) &&
    jobNumbersInRange(o)
  );
}

describe("encodeInsertedJob's direct layout", () => {
  it("writes the general encoder's bytes for random inserted records, anywhere in the shared chunk (seeded)", { timeout: HEAVY_TEST_MS }, () => {
    const r = testRandom("inserted-record layout");
    const handedOut: [Uint8Array, string][] = [];
    let roundTripped = 0;
    for (let i = 0; i < 3000; i++) {
      // A record of random length in between moves the next one anywhere in the chunk, its end included.
      if (r.random() < 0.5) packRecord({ id: "x".repeat(r.int(600)) }, true);
      const rec = insertedRecord(r);
      const expected = hex(general.pack(rec));
      const shared = r.random() < 0.7;
      const got = encodeInsertedJob(rec, shared);
      expect(hex(got), `record ${i} of seed ${r.seed}`).toBe(expected);
      if (shared) handedOut.push([got, expected]);
      if (readsBack(rec)) {
        const back = decodeJob("j/x", got);
        expect(hex(back.payload)).toBe(hex(rec.payload));
        // -0 is written as the integer 0 (by the general encoder too).
        const plain = Object.fromEntries(Object.entries(rec).flatMap(([k, v]) => (v === undefined ? [] : [[k, Object.is(v, -0) ? 0 : v]])));
        const headersBack = rec.headers === undefined ? undefined : Object.fromEntries(Object.entries(rec.headers).filter(([, v]) => v !== undefined));
        expect({ ...back, payload: undefined }, `record ${i} of seed ${r.seed}`).toEqual({ ...plain, headers: headersBack, payload: undefined });
        roundTripped++;
      }
    }
    // Every shared encoding still holds its own bytes after all that came after it.
    for (const [b, expected] of handedOut) expect(hex(b)).toBe(expected);
    expect(roundTripped).toBeGreaterThan(100);
  });

  it("writes a chained step's record as the general encoder does, as the chunk fills and turns over", () => {
    const headers = Object.freeze({ "workflow.run_id": "01M913J8BT2KFQCWYT06877MWB", "workflow.step": "6" });
    for (let i = 0; i < 400; i++) {
      const rec = {
        id: `01M913J8FSCWVKEGKCP67SH${String(i).padStart(3, "0")}`,
        queue: "workflow-steps",
        state: "claimed",
        seq: `01M913J8FSCWVKEGKCP67SH${String(i).padStart(3, "0")}`,
        priority: 1000,
        payload: new Uint8Array([1, 2, 3, 4]),
        payloadRef: undefined,
        payloadSize: undefined,
        headers,
        attempts: 1,
        maxAttempts: 3,
        enqueuedAt: 1796407370233 + i,
        runAt: undefined,
        dedupKey: undefined,
        debounceKey: undefined,
        claimedAt: 1796407370233.5 + i,
      } as JobRecord;
      expect(hex(encodeInsertedJob(rec, true))).toBe(hex(general.pack(rec)));
    }
  });

  it("writes a header map past the room it first asks for (a second layout) and one that is too long for it", () => {
    const base = { id: "a", queue: "q", state: "pending", seq: "a", priority: 1, payload: new Uint8Array([1]) } as const;
    for (const h of [
      { big: "v".repeat(600) },
      { a: "x".repeat(300), b: "y".repeat(300), c: "z".repeat(200) },
      { long: "w".repeat(70_000) },
      { wide: "é".repeat(400) },
    ]) {
      const rec = { ...base, headers: h as unknown as Record<string, string>, attempts: 0, maxAttempts: 3, enqueuedAt: 1 } as JobRecord;
      expect(hex(encodeInsertedJob(rec, true))).toBe(hex(general.pack(rec)));
      expect(hex(encodeInsertedJob(rec, false))).toBe(hex(general.pack(rec)));
    }
  });
});
