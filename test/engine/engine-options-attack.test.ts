/**
 * @module Attacks on `Engine.open`'s options: values that are not what they
 * seem (a numeric string, a bigint, a Number object, -0), options that are
 * not an object, getters and Proxies that throw or answer differently on a
 * second read, and a key prefix list claiming billions of entries. Each ends
 * in a `ValidationError` naming the option before any store request, or
 * opens with the value that was checked.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, ValidationError, WriteBatch } from "taquba";
import { openRefusal as refusal } from "./fixtures/engine-open-error.js";

/** `base` with a getter for `name` that throws (spreading it would call the getter, so it is defined in place). */
const throwing = (name: string, base: object = {}) =>
  Object.defineProperty(base, name, {
    enumerable: true,
    get() {
      throw new Error(`no ${name} today`);
    },
  });

describe("Engine.open refuses options that are not what they seem", () => {
  it.each([
    ["a numeric string", { maxWalBytes: "100" }, /maxWalBytes must be .*got "100" \(a string\)/],
    ["a bigint", { maxWalBytes: 100n }, /maxWalBytes must be .*got 100n \(a bigint\)/],
    ["a Number object", { flushIntervalMs: new Number(2) }, /flushIntervalMs must be .*got an object/],
    ["-0 where at least 1 is needed", { maxSegmentRuns: -0 }, /maxSegmentRuns must be .*got -0/],
    ["more WAL puts in flight than the fence gap", { maxInflightWalPuts: 64 }, /maxInflightWalPuts must be .*<= 63, got 64/],
  ])("%s", async (_label, opts, says) => {
    expect((await refusal(opts)).message).toMatch(says);
  });

  it.each([
    ["null", null],
    ["a string", "fast"],
    ["an array", [1]],
  ])("options that are %s", async (_label, opts) => {
    expect((await refusal(opts)).message).toMatch(/the engine options must be an object/);
  });

  it("getters that throw, at the top and inside retry and pageValues, are each named", async () => {
    const err = await refusal(throwing("maxWalBytes", { retry: throwing("attempts"), pageValues: throwing("cacheBytes", { keyPrefixes: ["a/"] }) }));
    expect(err.issues).toEqual(
      expect.arrayContaining([
        "reading maxWalBytes threw: no maxWalBytes today",
        "reading retry.attempts threw: no attempts today",
        "reading pageValues.cacheBytes threw: no cacheBytes today",
      ]),
    );
  });

  it("a Proxy whose traps throw, and a clock whose now getter throws", async () => {
    const trap = new Proxy(
      {},
      {
        get() {
          throw new Error("trapped");
        },
      },
    );
    expect((await refusal(trap)).issues).toContain("reading flushIntervalMs threw: trapped");
    const clock = Object.defineProperty({}, "now", {
      get() {
        throw new Error("no time");
      },
    });
    expect((await refusal({ clock })).message).toMatch(/clock: no time/);
  });

  it("a key prefix list claiming a billion entries is refused without walking it", async () => {
    // Every entry read is counted: the refusal must come from the length alone, whatever the machine's load.
    let entriesRead = 0;
    const counting = (length: number) =>
      new Proxy(["a/"], {
        get: (t, k) => {
          if (k === "length") return length;
          if (typeof k === "string" && /^\d+$/.test(k)) entriesRead++;
          return Reflect.get(t, k);
        },
      });
    expect((await refusal({ pageValues: { keyPrefixes: counting(1e9) } })).message).toMatch(
      /pageValues\.keyPrefixes may hold at most 1024 prefixes, got 1000000000/,
    );
    expect((await refusal({ pageValues: { keyPrefixes: counting(2 ** 32) } })).message).toMatch(/at most 1024 prefixes/);
    expect(entriesRead).toBe(0);
    const sparse: string[] = [];
    sparse.length = 1e9;
    expect((await refusal({ pageValues: { keyPrefixes: sparse } })).message).toMatch(/at most 1024 prefixes, got 1000000000/);
  });

  it("retry attempts are bounded as the stores' request retries are", async () => {
    for (const attempts of [101, Number.MAX_SAFE_INTEGER, 1e30, Number.POSITIVE_INFINITY, Number.NaN, 0, 2.5]) {
      expect((await refusal({ retry: { attempts, baseDelayMs: 0 } })).message).toContain("retry.attempts must be a whole number >= 1 and <= 100");
    }
    const engine = await Engine.open(new MemoryStore(), { retry: { attempts: 100 } });
    await engine.close();
  });

  it("a getter read once: the value checked is the value used, not a second answer", async () => {
    let reads = 0;
    const opts = {
      get maxWalBytes() {
        reads++;
        return reads === 1 ? 64 : Number.NaN;
      },
      get prefix() {
        return reads <= 1 ? "p/" : "bad";
      },
    };
    const store = new MemoryStore();
    const engine = await Engine.open(store, opts);
    expect(reads).toBe(1);
    await engine.commit(new WriteBatch().put("k", new Uint8Array(200)));
    await engine.close();
    const keys: string[] = [];
    for await (const o of store.list("")) keys.push(o.key);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.startsWith("p/"))).toBe(true);
  });

  it("thousands of fields that are no option, at the top and in retry, are refused in a message of bounded size", async () => {
    const stray: Record<string, number> = {};
    for (let i = 0; i < 20_000; i++) stray[`setting${i}`] = i;
    const err = await refusal({ ...stray, retry: { ...stray } });
    expect(err.issues).toHaveLength(22);
    expect(err.issues[10]).toBe("19990 more fields of the options are not options either (20000 in all)");
    expect(err.issues[21]).toBe("19990 more fields of retry are not options either (20000 in all)");
    expect(err.message.length).toBeLessThan(10_000);
  });

  it("a misspelt option, at the top, in retry or in pageValues, is refused naming it and the options taken", async () => {
    const top = await refusal({ flushIntervalMS: 5 });
    expect(top.issues).toEqual([expect.stringMatching(/^flushIntervalMS is not an option \(misspelt\?\); the options are .*\bflushIntervalMs\b/)]);
    const nested = await refusal({ retry: { attempt: 3 }, pageValues: { keyPrefixes: ["a/"], minByte: 10 } });
    expect(nested.issues).toEqual([expect.stringContaining("retry.attempt is not an option"), expect.stringContaining("pageValues.minByte is not an option")]);
    // The reader's options too, and its retry's (read by the writer's check).
    const reader = await EngineReader.open(new MemoryStore(), { prefx: "a/", retry: { attempt: 2 } } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(reader).toBeInstanceOf(ValidationError);
    expect((reader as ValidationError).message).toContain("EngineReaderOptions.prefx is not an option");
    // Spelt right, they open.
    const engine = await Engine.open(new MemoryStore(), { flushIntervalMs: 5, retry: { attempts: 3 }, pageValues: { keyPrefixes: ["a/"], minBytes: 10 } });
    await engine.close();
  });
});
