/**
 * @module The job record an insert writes, encoded field by field in the
 * order of its literal (`encodeInsertedJob`), is byte for byte what the
 * record codec writes for that record: the direct encoder (`packRecord`)
 * and the general one. Over every field an insert may set: each state it
 * writes, caller ids, dedup and debounce keys, offloaded payloads, header
 * maps of every size class and non-ASCII text, and numbers of every
 * MessagePack form. A value the direct writer does not take goes to the
 * codec as it would anyway.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore } from "taquba";
import { QueueConfigs } from "../../runtime/queue/config.js";
import { encodeInsertedJob } from "../../runtime/queue/inserted-record.js";
import * as K from "../../runtime/queue/keys.js";
import { decodeJob, encodeJob, type JobRecord } from "../../runtime/queue/record.js";
import { packRecord } from "../../runtime/queue/record-pack.js";
import { insertJobRecord, type PreparedEnqueue, type TransitionContext } from "../../runtime/queue/transitions.js";
import { Txn } from "../../runtime/queue/txn.js";
import type { EnqueueOptions } from "../../runtime/queue/types.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

function context(now: number): TransitionContext {
  const configs = new QueueConfigs({ maxAttempts: 4, defaultPriority: 7 }, undefined);
  let n = 0;
  return {
    now,
    config: (q) => configs.get(q),
    newId: () => `01M913J8FSCWVKEGKCP67SH${String(n++).padStart(3, "0")}`,
    seqHighWater: () => undefined,
    superseded: { marks: false },
  };
}

function headersOf(n: number, value: (i: number) => string): Record<string, string> {
  const h: Record<string, string> = {};
  for (let i = 0; i < n; i++) h[`h${i}`] = value(i);
  return Object.freeze(h);
}

interface Case {
  name: string;
  opts: EnqueueOptions;
  claimed?: boolean;
  offloaded?: boolean;
  payload?: Uint8Array;
  now?: number;
  /** A value enqueue refuses (the insert takes options as checked): written alike, read back as damage. */
  outOfRange?: boolean;
  queue?: string;
}

const CASES: Case[] = [
  { name: "a pending job with the queue's defaults", opts: {} },
  {
    name: "a job inserted claimed (a chained step)",
    opts: { headers: { "workflow.run_id": "01M913J8BT2KFQCWYT06877MWB", "workflow.step": "6" } },
    claimed: true,
  },
  { name: "a caller id, priority and attempts", opts: { jobId: "job-é-1", priority: 3, maxAttempts: 70000 } },
  { name: "a dedup key", opts: { dedupKey: "d-ü" } },
  { name: "a dedup key on a job inserted claimed (released)", opts: { dedupKey: "d" }, claimed: true },
  { name: "a future job (scheduled)", opts: { runAt: 2_000_000_000_000 } },
  { name: "a future job asked claimed (stays scheduled)", opts: { runAt: 2_000_000_000_000, dedupKey: "x" }, claimed: true },
  { name: "a debounced job", opts: { debounce: { key: "b-key", periodMs: 500 } } },
  { name: "an offloaded payload", opts: {}, offloaded: true, payload: new Uint8Array(70_000).fill(3) },
  { name: "an offloaded payload inserted claimed", opts: {}, offloaded: true, claimed: true, payload: new Uint8Array(300) },
  { name: "no headers", opts: { headers: {} } },
  { name: "15 headers (a fixmap's most)", opts: { headers: headersOf(15, (i) => `v${i}`) } },
  { name: "17 headers (a map16)", opts: { headers: headersOf(17, (i) => `v${i}`) } },
  {
    name: "headers of every string size and non-ASCII text",
    opts: { headers: headersOf(4, (i) => ["", "é".repeat(40), "x".repeat(300), "y".repeat(70_000)][i]!) },
  },
  { name: "priorities of every integer form", opts: { priority: 2 ** 31 - 1 } },
  { name: "a negative 16-bit priority", opts: { priority: -1000 }, outOfRange: true },
  { name: "a negative 32-bit priority", opts: { priority: -100_000 }, outOfRange: true },
  { name: "a fractional priority (a float64)", opts: { priority: 0.5 }, outOfRange: true },
  { name: "a large payload inline (bin 32)", opts: {}, payload: new Uint8Array(70_000).fill(9) },
  { name: "an empty payload", opts: {}, payload: new Uint8Array(0) },
  { name: "a fractional clock", opts: {}, now: 1796407370233.5, claimed: true },
  { name: "a small clock (uint forms)", opts: {}, now: 200, claimed: true },
  { name: "a non-ASCII queue name", opts: {}, queue: "queue-ñ" },
];

describe("encodeInsertedJob", () => {
  it.each(CASES)("writes $name as the record codec writes the record", async (c) => {
    for (const paging of [undefined, { pageValues: { keyPrefixes: ["j/"], minBytes: 64 } }]) {
      const engine = await Engine.open(new MemoryStore(), paging);
      try {
        const txn = new Txn(engine);
        const payload = c.payload ?? new Uint8Array([1, 2, 3, 4]);
        const item: PreparedEnqueue = { queueName: c.queue ?? "q", payload, opts: c.opts };
        if (c.offloaded === true) item.payloadRef = "01M913J8FSCWVKEGKCP67SHREF";
        const ins = insertJobRecord(txn, context(c.now ?? 1796407370233), item, c.claimed === true);
        const r = ins.record!;
        const stored = txn.get(K.jobKey(r.id))!;
        expect(hex(stored)).toBe(hex(packRecord(r)!));
        expect(hex(stored)).toBe(hex(general.pack(r)));
        if (c.outOfRange === true) {
          expect(() => decodeJob("j/x", stored)).toThrow(/its priority .* is not a whole number from 0/);
          continue;
        }
        // The payload compared as bytes: a deep compare of a 70 KB array takes seconds.
        const back = decodeJob("j/x", stored);
        expect(hex(back.payload)).toBe(hex(r.payload));
        expect({ ...back, payload: undefined }).toEqual({ ...r, payload: undefined });
        await engine.commit(txn.finish());
      } finally {
        await engine.close();
      }
    }
  });

  it("writes a value of another type as the record codec does, or hands the record to it: the same bytes either way", () => {
    const r: JobRecord = {
      id: "a",
      queue: "q",
      state: "pending",
      seq: "a",
      priority: 1,
      payload: new Uint8Array([1]),
      attempts: 0,
      maxAttempts: 3,
      enqueuedAt: 1,
    };
    // A header value that is not a string and a Buffer payload go to the codec; a string priority and a number id are written as it writes them.
    for (const odd of [
      { ...r, headers: { h: 5 } as unknown as Record<string, string> },
      { ...r, payload: Buffer.from([1, 2]) },
      { ...r, priority: "1" as unknown as number },
      { ...r, id: 7 as unknown as string },
    ]) {
      expect(hex(encodeInsertedJob(odd, false))).toBe(hex(encodeJob(odd)));
      expect(hex(encodeInsertedJob(odd, true))).toBe(hex(encodeJob(odd)));
    }
  });
});
