/**
 * @module Pure queue logic: key layout, record codec, backoff and name validation.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { DEFAULT_QUEUE_CONFIG, MAX_DELAY_MS, StoreCorruptedError, ValidationError } from "taquba";
import { backoffDelay } from "../../runtime/queue/index.js";
import { compareKeys, validateObjectKey } from "../../runtime/store/keys.js";
import { validateDebounceKey } from "../../runtime/queue/validate-enqueue.js";
import * as K from "../../runtime/queue/keys.js";
import { decodeJob, encodeJob, decodeStats, encodeStats, type JobRecord } from "../../runtime/queue/record.js";
import {
  MAX_KV_KEY_BYTES,
  validateDedupKey,
  validateJobId,
  validateKvKey,
  validateKvPrefix,
  validateMillis,
  validatePositiveInt,
  validateQueueName,
  validateStoreName,
} from "../../runtime/queue/names.js";
import { resolveQueueConfig } from "../../runtime/queue/config.js";

describe("keys", () => {
  it("pads a time the same whether or not it was the last one padded, and refuses bad times after a good one", () => {
    expect(K.padTime(1_700_000_000_000.7)).toBe("0001700000000000");
    expect(K.padTime(1_700_000_000_000.7)).toBe("0001700000000000");
    expect(K.padTime(0)).toBe("0000000000000000");
    expect(K.padTime(-0)).toBe("0000000000000000");
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 1e30, "5" as unknown as number]) {
      K.padTime(7);
      expect(() => K.padTime(bad)).toThrow(/an index time must be a number of ms/);
      expect(() => K.padTime(bad)).toThrow(/an index time must be a number of ms/);
    }
    expect(K.padTime(7)).toBe("0000000000000007");
  });

  it("pads numbers so byte order is numeric order", () => {
    const times = [0, 9, 10, 1_700_000_000_000, 2 ** 53 - 1];
    const keys = times.map((t) => K.scheduledKey(t, "q", "id"));
    expect([...keys].sort(compareKeys)).toEqual(keys);
    const prios = [0, 5, 100, 1000, 2 ** 32 - 1].map((p) => K.pendingKey("q", p, "01"));
    expect([...prios].sort(compareKeys)).toEqual(prios);
  });

  it("keeps one queue's prefix from matching another queue", () => {
    expect(K.pendingKey("ab", 1, "x").startsWith(K.pendingPrefix("a"))).toBe(false);
    expect(K.claimedKey("a.b", "x").startsWith(K.claimedPrefix("a"))).toBe(false);
  });

  it("parses what it builds", () => {
    expect(K.parseScheduledKey(K.scheduledKey(123, "my-q", "ID_1"))).toEqual({ runAt: 123, queue: "my-q", id: "ID_1" });
    expect(K.parseRetentionKey(K.retentionKey(77, "a-b"))).toEqual({ dueAt: 77, id: "a-b" });
    expect(K.leadingTime(K.retentionKey(1234, "x"))).toBe(1234);
  });
});

describe("record codec", () => {
  it("round-trips a record and omits absent fields", () => {
    const r: JobRecord = {
      id: "a",
      queue: "q",
      state: "scheduled",
      seq: "01H",
      priority: 5,
      payload: new Uint8Array([1, 2, 3]),
      headers: { h: "v" },
      attempts: 2,
      maxAttempts: 3,
      enqueuedAt: 10,
      runAt: 99,
      attached: new Uint8Array([9]),
      lastError: "boom",
    };
    const bytes = encodeJob({ ...r, wokenAt: undefined });
    const back = decodeJob("j/a", bytes);
    expect(back).toEqual(r);
    expect(back.payload).toBeInstanceOf(Uint8Array);
    expect("wokenAt" in back).toBe(false);
  });

  it("rejects garbage with StoreCorruptedError", () => {
    expect(() => decodeJob("j/x", new Uint8Array([0xc1]))).toThrow(/corrupted/);
    expect(() => decodeStats("n/x", encodeJob({} as JobRecord))).toThrow(/corrupted/);
    expect(decodeStats("n/q", encodeStats({ pending: 1, scheduled: 2, claimed: 3, done: 4, dead: 5 }))).toEqual({
      pending: 1,
      scheduled: 2,
      claimed: 3,
      done: 4,
      dead: 5,
    });
  });

  it("writes stats as the general MessagePack encoder does, at every integer width and past it", () => {
    const general = new Packr({ useRecords: false });
    const widths = [0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x1_0000, 0xffff_ffff];
    for (const n of widths) {
      const s = { pending: n, scheduled: 0, claimed: 0x80, done: n, dead: 0xffff };
      const bytes = encodeStats(s);
      expect(Buffer.from(bytes).toString("hex"), `value ${n}`).toBe(Buffer.from(general.pack([n, 0, 0x80, n, 0xffff])).toString("hex"));
      expect(decodeStats("n/q", bytes)).toEqual(s);
    }
    // Each field at each width, beside four others of other widths: a field written in another's place shows.
    for (let i = 0; i < widths.length; i++) {
      const [a, b, c, d, e] = [0, 2, 4, 6, 8].map((k) => widths[(i + k) % widths.length]!) as [number, number, number, number, number];
      const s = { pending: a, scheduled: b, claimed: c, done: d, dead: e };
      expect(Buffer.from(encodeStats(s)).toString("hex"), `counts ${[a, b, c, d, e]}`).toBe(Buffer.from(general.pack([a, b, c, d, e])).toString("hex"));
    }
    // Outside the unsigned 32-bit range (a done count past 2^32, or a count a bug drove negative) the general encoder writes it.
    for (const n of [2 ** 32, 2 ** 53 - 1, -1]) {
      const s = { pending: 0, scheduled: 0, claimed: 0, done: n, dead: 0 };
      expect(decodeStats("n/q", encodeStats(s))).toEqual(s);
    }
    // A count that is no whole number is written as the general encoder does, and read back as damage, not as a count.
    const fraction = encodeStats({ pending: 0, scheduled: 0, claimed: 0, done: 0.5, dead: 0 });
    expect(Buffer.from(fraction).toString("hex")).toBe(Buffer.from(general.pack([0, 0, 0, 0.5, 0])).toString("hex"));
    expect(() => decodeStats("n/q", fraction)).toThrow(StoreCorruptedError);
  });
});

describe("backoff", () => {
  it("doubles from the base up to the cap", () => {
    const b = DEFAULT_QUEUE_CONFIG.backoff;
    expect([1, 2, 3, 4].map((a) => backoffDelay(b, a))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffDelay(b, 20)).toBe(300_000);
    expect(backoffDelay(b, 5000)).toBe(300_000);
    expect(backoffDelay({ baseMs: 0, maxMs: 10, factor: 2 }, 3)).toBe(0);
    expect(backoffDelay({ baseMs: 100, maxMs: 10_000, factor: 3 }, 3)).toBe(900);
  });

  it("resolves the Rust defaults and validates overrides", () => {
    expect(DEFAULT_QUEUE_CONFIG).toMatchObject({ leaseMs: 30_000, maxAttempts: 3, deadRetentionMs: 7 * 24 * 3600 * 1000, doneRetentionMs: undefined });
    expect(resolveQueueConfig({ maxAttempts: 5, deadRetention: null })).toMatchObject({ maxAttempts: 5, deadRetentionMs: null, leaseMs: 30_000 });
    expect(() => resolveQueueConfig({ maxAttempts: 0 })).toThrow(ValidationError);
    expect(() => resolveQueueConfig({ backoff: { baseMs: 1, maxMs: 2, factor: 0.5 } })).toThrow(ValidationError);
  });
});

describe("names", () => {
  it("accepts and rejects queue names", () => {
    for (const ok of ["a", "emails", "workflow.steps", "a:b-c_d", "x".repeat(128)]) expect(() => validateQueueName(ok)).not.toThrow();
    for (const bad of ["", "a/b", "..", ".", "é", "x".repeat(129), "a b"]) expect(() => validateQueueName(bad)).toThrow(ValidationError);
  });
  it("accepts and rejects job ids", () => {
    for (const ok of ["a", "A_b-9", "x".repeat(128)]) expect(() => validateJobId(ok)).not.toThrow();
    for (const bad of ["", "a.b", "a/b", "x".repeat(129)]) expect(() => validateJobId(bad)).toThrow(ValidationError);
  });
  it("accepts and rejects KV keys and store names", () => {
    expect(() => validateKvKey("app/x/ü")).not.toThrow();
    expect(() => validateKvKey("")).toThrow(ValidationError);
    expect(() => validateKvKey("\uD800")).toThrow(ValidationError);
    expect(() => validateStoreName("tenant/a")).not.toThrow();
    expect(() => validateStoreName("a//b")).toThrow(ValidationError);
    expect(() => validateStoreName("../x")).toThrow(ValidationError);
  });

  // Found by mutation testing: non-string values, exact limits and the messages were unchecked.
  it("refuses values that are not strings, at the exact limits, naming the value", () => {
    const message = (f: () => void) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(ValidationError);
        return (e as Error).message;
      }
      throw new Error("expected a ValidationError");
    };
    // A number would pass the character checks once turned into text.
    for (const bad of [5, null, undefined, ["a"], { length: 1 }]) {
      expect(message(() => validateQueueName(bad))).toMatch(/^invalid queue name .*; use 1-128 characters/);
      expect(message(() => validateJobId(bad))).toMatch(/^invalid job id .*; use 1-128 characters/);
      expect(message(() => validateKvKey(bad))).toMatch(/^invalid KV key .*; use 1-1024 bytes of well-formed UTF-8 text/);
      expect(message(() => validateDedupKey(bad))).toMatch(/^invalid dedupKey .*; use 1-512 bytes of well-formed UTF-8 text/);
    }
    expect(message(() => validateStoreName(5))).toBe("the queue store name must be a string, got 5");
    expect(message(() => validateStoreName(5n))).toBe("the queue store name must be a string, got 5n (a bigint)");
    expect(message(() => validateStoreName("../x"))).toMatch(/^invalid queue store name "\.\.\/x"; it becomes an object key prefix/);
    expect(message(() => validateQueueName("a/b"))).toContain('"a/b"');
    expect(message(() => validateJobId("a.b"))).toContain('"a.b"');
    // KV keys are limited in UTF-8 bytes, not characters: exactly the limit passes.
    expect(() => validateKvKey("x".repeat(MAX_KV_KEY_BYTES))).not.toThrow();
    expect(message(() => validateKvKey("x".repeat(MAX_KV_KEY_BYTES + 1)))).toContain("invalid KV key");
    expect(() => validateKvKey("é".repeat(MAX_KV_KEY_BYTES / 2))).not.toThrow();
    expect(() => validateKvKey(`${"é".repeat(MAX_KV_KEY_BYTES / 2)}x`)).toThrow(ValidationError);
    // Three- and four-byte characters around the limit, where the key's length alone cannot decide.
    expect(() => validateKvKey(`${"€".repeat(341)}x`)).not.toThrow();
    expect(() => validateKvKey(`${"€".repeat(341)}xy`)).toThrow(ValidationError);
    expect(() => validateKvKey("€".repeat(342))).toThrow(ValidationError);
    expect(() => validateKvKey("😀".repeat(MAX_KV_KEY_BYTES / 4))).not.toThrow();
    expect(() => validateKvKey(`${"😀".repeat(MAX_KV_KEY_BYTES / 4)}x`)).toThrow(ValidationError);
    expect(() => validateDedupKey("€".repeat(400))).toThrow(ValidationError);
  });

  it("a 100 KB name, id or key is shown cut in the refusal, quoted as before", () => {
    const long = `${"k".repeat(100 * 1024)}/`;
    const shown = `"${"k".repeat(64)}..."`;
    const refusals: [() => void, string][] = [
      [() => validateQueueName(long), `invalid queue name ${shown}; use 1-128 characters`],
      [() => validateJobId(long), `invalid job id ${shown}; use 1-128 characters`],
      [() => validateKvKey(long), `invalid KV key ${shown}; use 1-1024 bytes`],
      [() => validateKvPrefix(long), `invalid KV prefix ${shown}; use at most 1024 bytes`],
      [() => validateDedupKey(long), `invalid dedupKey ${shown}; use 1-512 bytes`],
      [() => validateDebounceKey(long), `invalid debounce key ${shown}; use 1-512 bytes`],
      [() => validateStoreName(long), `invalid queue store name ${shown}; it becomes an object key prefix`],
      [() => validateObjectKey(long), `invalid object key ${shown}; use '/'-separated`],
    ];
    for (const [refuse, start] of refusals) {
      let message = "";
      try {
        refuse();
      } catch (e) {
        expect(e).toBeInstanceOf(ValidationError);
        message = (e as Error).message;
      }
      expect(message.startsWith(start), message.slice(0, 200)).toBe(true);
      expect(message.length).toBeLessThan(400);
    }
    // A short one is shown whole, a lone surrogate escaped.
    expect(() => validateKvKey("a\uD800")).toThrow('invalid KV key "a\\ud800"');
    expect(() => validateObjectKey(7 as unknown as string)).toThrow("an object key must be a string, got 7");
  });

  it("positive integers and milliseconds: the boundaries and the offending value in the message", () => {
    expect(() => validatePositiveInt("concurrency", 1)).not.toThrow();
    expect(() => validatePositiveInt("concurrency", Number.MAX_SAFE_INTEGER)).not.toThrow();
    // A string shows as a string: "3" is not the number 3 the message would otherwise seem to refuse.
    const positives: [unknown, string][] = [
      [0, "0"],
      [-1, "-1"],
      [1.5, "1.5"],
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      [2 ** 53, "9007199254740992"],
      ["3", '"3" (a string)'],
      [5n, "5n (a bigint)"],
      [null, "null"],
      [{}, "an object"],
    ];
    for (const [bad, shown] of positives) {
      expect(() => validatePositiveInt("concurrency", bad)).toThrow(`concurrency must be a positive integer, got ${shown}`);
    }
    for (const ok of [0, 0.5, 1, 1e9]) expect(() => validateMillis("leaseMs", ok)).not.toThrow();
    const millis: [unknown, string][] = [
      [-1, "-1"],
      [-0.5, "-0.5"],
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      [1e30, "1e+30"],
      ["5", '"5" (a string)'],
      [null, "null"],
      [undefined, "undefined"],
    ];
    for (const [bad, shown] of millis) {
      expect(() => validateMillis("leaseMs", bad)).toThrow(`leaseMs must be a number of milliseconds from 0 to ${MAX_DELAY_MS} (10 years), got ${shown}`);
    }
  });
});
