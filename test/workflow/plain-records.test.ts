/**
 * @module Records and memo entries read from the store decode to plain data:
 * MessagePack extension types a bucket writer plants (RegExp, Error, Set,
 * Map, custom records) are refused, while undefined and Dates, which our
 * own encoders write, still round-trip.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, RunId, StoreCorruptedError } from "taquba";
import { assertPlainMessagePack, MessagePackExtensionError } from "../../runtime/engine/plain-messagepack.js";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { decodeJob, encodeJob } from "../../runtime/queue/record.js";

const hostile = new Packr({ useRecords: false, moreTypes: true });
const planted: ReadonlyArray<readonly [string, unknown]> = [
  ["RegExp", /^(a+)+$/],
  ["Error", new Error("planted")],
  ["Set", new Set(["x"])],
  ["nested RegExp", { ok: [1, { re: /x/ }] }],
];

describe("plain MessagePack from the store", () => {
  it.each(planted)("memoized() recomputes instead of returning a planted %s", async (_name, value) => {
    const memo = new MemoStore(new MemoryStore(), "m").newMemo(RunId.parse("run-1"), 0);
    const bytes = new Uint8Array(hostile.pack(value));
    expect(hostile.unpack(bytes)).not.toEqual({}); // the bytes really carry the object
    await memo.put("v", bytes);
    const v = await memo.memoized("v", async () => ({ fresh: true }));
    expect(v).toEqual({ fresh: true });
  });

  it.each(planted)("decodeValue refuses a planted %s", (_name, value) => {
    expect(() => decodeValue(new Uint8Array(hostile.pack(value)))).toThrow(MessagePackExtensionError);
  });

  it("a job record carrying an extension is a StoreCorruptedError", () => {
    const record = new Uint8Array(hostile.pack({ id: "j1", state: "pending", payload: new Uint8Array(0), headers: { h: /x/ } }));
    expect(() => decodeJob("queue/jobs/j1", record)).toThrow(StoreCorruptedError);
  });

  it("values our encoders write still round-trip", () => {
    const value = { a: [1, undefined, "x"], when: new Date(5), raw: new Uint8Array([1, 2]), big: 2 ** 60, neg: -7, f: 1.5, nested: { m: { n: null } } };
    expect(decodeValue(encodeValue(value))).toEqual(value);
    const job = {
      id: "j1",
      queue: "q",
      state: "pending",
      seq: "s",
      priority: 0,
      payload: new Uint8Array([9]),
      headers: { k: "v" },
      attempts: 0,
      maxAttempts: 3,
      enqueuedAt: 5,
    };
    expect(decodeJob("k", encodeJob(job as never))).toMatchObject({ id: "j1", headers: { k: "v" } });
  });

  it("scans every MessagePack form and skips binary contents", () => {
    const long = "s".repeat(70_000);
    const value = {
      long,
      arr: new Array(20).fill(1),
      map: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])),
      bin: new Uint8Array([0xd4, 0x01, 0x00]),
      ints: [200, 70_000, 5_000_000_000, -200, -70_000, -5_000_000_000],
    };
    expect(() => assertPlainMessagePack(encodeValue(value))).not.toThrow();
    expect(() => assertPlainMessagePack(new Uint8Array([0xc1]))).toThrow(MessagePackExtensionError);
  });

  it("reads the type byte of every extension form at its offset, past long binaries", () => {
    const ext8 = (type: number) => [0xc7, 1, type, 0];
    const ext16 = (type: number) => [0xc8, 0, 1, type, 0];
    const ext32 = (type: number) => [0xc9, 0, 0, 0, 1, type, 0];
    const fixext = (size: number, type: number) => [0xd4 + Math.log2(size), type, ...new Array<number>(size).fill(0)];
    const forms = [ext8, ext16, ext32, (t: number) => fixext(1, t), (t: number) => fixext(4, t), (t: number) => fixext(16, t)];
    // A 300-byte bin16 and a 70,000-byte bin32 whose contents look like extensions, then the form: a 2-array.
    const bin16 = [0xc5, 0x01, 0x2c, ...new Array<number>(300).fill(0xd4)];
    const bin32 = [0xc6, 0x00, 0x01, 0x11, 0x70, ...new Array<number>(70_000).fill(0xc7)];
    for (const form of forms) {
      for (const prefix of [bin16, bin32]) {
        expect(() => assertPlainMessagePack(new Uint8Array([0x92, ...prefix, ...form(0xff)]))).not.toThrow();
        expect(() => assertPlainMessagePack(new Uint8Array([0x92, ...prefix, ...form(0)]))).not.toThrow();
        expect(() => assertPlainMessagePack(new Uint8Array([0x92, ...prefix, ...form(5)]))).toThrow(/extension type 5/);
        expect(() => assertPlainMessagePack(new Uint8Array([0x92, ...prefix, ...form(0xfe)]))).toThrow(/extension type -2/);
      }
    }
  });
});
