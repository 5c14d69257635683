/**
 * @module The store wrappers: seeded fault injection (withFaults), latency
 * (withLatency) and request counting (withCounting).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StoreRequestError, TaqubaError, ValidationError, withCounting, withFaults, withLatency } from "taquba";
import { rangeOfBody, readRangeInto } from "../../runtime/store/object-store.js";
import { InjectedFaultError } from "taquba/testing";
import { startLocalLatenessProbe } from "../support/lateness-probe.js";

const bytes = (s: string) => new TextEncoder().encode(s);

/** Runs `n` gets and records which ones failed. */
async function failurePattern(seed: number, n: number): Promise<boolean[]> {
  const store = withFaults(new MemoryStore(), { failureRate: 0.3, seed, ops: ["get"] });
  const out: boolean[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      await store.get("k").then(
        () => false,
        (e: unknown) => e instanceof InjectedFaultError,
      ),
    );
  }
  return out;
}

describe("withFaults", () => {
  it("fails the same calls for the same seed and different ones for another seed", async () => {
    const a = await failurePattern(7, 200);
    const b = await failurePattern(7, 200);
    const c = await failurePattern(8, 200);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    const failures = a.filter(Boolean).length;
    // 0.3 of 200 = 60; a fair generator lands well inside this band.
    expect(failures).toBeGreaterThan(35);
    expect(failures).toBeLessThan(85);
  });

  it("throws a retryable TaqubaError with code INJECTED_FAULT and counts it", async () => {
    const store = withFaults(new MemoryStore(), { failureRate: 1 });
    const err = await store.delete("x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InjectedFaultError);
    expect(err).toBeInstanceOf(TaqubaError);
    expect((err as InjectedFaultError).code).toBe("INJECTED_FAULT");
    expect((err as InjectedFaultError).retryable).toBe(true);
    expect(store.injected).toBe(1);
  });

  it("leaves the object in place when a put fails after the write landed", async () => {
    const inner = new MemoryStore();
    const store = withFaults(inner, { failureRate: 1, failAfterWriteRate: 1, ops: ["put"] });
    const err = await store.put("a/b", bytes("v")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InjectedFaultError);
    expect((err as InjectedFaultError).afterWrite).toBe(true);
    expect(new TextDecoder().decode((await inner.get("a/b"))!.body)).toBe("v");
    // A retried create-if-absent now meets the landed write.
    store.failureRate = 0;
    await expect(store.put("a/b", bytes("v"), { ifNoneMatch: "*" })).rejects.toMatchObject({ code: "PRECONDITION_FAILED" });
  });

  it("writes nothing when a put fails before the write", async () => {
    const inner = new MemoryStore();
    const store = withFaults(inner, { failureRate: 1, failAfterWriteRate: 0, ops: ["put"] });
    await expect(store.put("k", bytes("v"))).rejects.toBeInstanceOf(InjectedFaultError);
    expect(await inner.get("k")).toBeNull();
  });

  it("splits put failures between before and after the write by failAfterWriteRate", async () => {
    const store = withFaults(new MemoryStore(), { failureRate: 1, seed: 3, ops: ["put"] });
    let after = 0;
    for (let i = 0; i < 200; i++) {
      const e = (await store.put(`k${i}`, bytes("v")).catch((x: unknown) => x)) as InjectedFaultError;
      if (e.afterWrite) after++;
    }
    expect(after).toBeGreaterThan(70);
    expect(after).toBeLessThan(130);
  });

  it("stops failing when failureRate is set to 0 and resumes when raised", async () => {
    const store = withFaults(new MemoryStore(), { failureRate: 1 });
    await expect(store.get("k")).rejects.toBeInstanceOf(InjectedFaultError);
    store.failureRate = 0;
    for (let i = 0; i < 50; i++) await store.put(`k${i}`, bytes("v"));
    expect(await store.get("k0")).not.toBeNull();
    const listed: string[] = [];
    for await (const o of store.list("k")) listed.push(o.key);
    expect(listed).toHaveLength(50);
    expect(store.injected).toBe(1);
    store.failureRate = 1;
    await expect(store.get("k0")).rejects.toBeInstanceOf(InjectedFaultError);
    expect(store.injected).toBe(2);
  });

  it("fails only the chosen operations, and a failing list yields nothing", async () => {
    const store = withFaults(new MemoryStore(), { failureRate: 1, ops: ["list"] });
    await store.put("p/a", bytes("1"));
    expect(await store.get("p/a")).not.toBeNull();
    const seen: string[] = [];
    const err = await (async () => {
      for await (const o of store.list("p/")) seen.push(o.key);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InjectedFaultError);
    expect(seen).toEqual([]);
  });

  it("rejects rates outside [0, 1] and unknown operations", () => {
    expect(() => withFaults(new MemoryStore(), { failureRate: 1.5 })).toThrow(ValidationError);
    expect(() => withFaults(new MemoryStore(), { failureRate: 0.1, failAfterWriteRate: -1 })).toThrow(ValidationError);
    expect(() => withFaults(new MemoryStore(), { failureRate: 0.1, ops: ["copy" as "get"] })).toThrow(ValidationError);
    const store = withFaults(new MemoryStore(), { failureRate: 0 });
    expect(() => {
      store.failureRate = Number.NaN;
    }).toThrow(ValidationError);
    expect(store.failureRate).toBe(0);
  });
});

describe("withLatency", () => {
  it("delays each call by about ms and passes results through", async () => {
    const store = withLatency(new MemoryStore(), { ms: 15, jitterMs: 2, seed: 5 });
    const t0 = performance.now();
    await store.put("k", bytes("v"));
    const got = await store.get("k");
    const keys: string[] = [];
    for await (const o of store.list("")) keys.push(o.key);
    const elapsed = performance.now() - t0;
    expect(new TextDecoder().decode(got!.body)).toBe("v");
    expect(keys).toEqual(["k"]);
    // Three calls of at least 13 ms each; timers may fire up to ~1 ms early.
    expect(elapsed).toBeGreaterThanOrEqual(36);
  });

  it("overlaps concurrent calls instead of queueing them", async () => {
    const store = withLatency(new MemoryStore(), { ms: 20 });
    // Queued, the 20 calls would take 20 times 20 ms of running; overlapped, about 20 ms. The time
    // this process was not run is left out: busy cores once stretched the overlapped calls to 611 ms.
    const stalls = startLocalLatenessProbe();
    try {
      const from = Date.now();
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.put(`k${i}`, bytes("v"))));
      const to = Date.now();
      const notRun = await stalls.notRunWithin(from, to);
      expect(to - from - notRun, `${to - from} ms for 20 calls, ${notRun} ms of it with this process not run`).toBeLessThan(20 * 20);
    } finally {
      stalls.stop();
    }
  });

  it("rejects negative delays", () => {
    expect(() => withLatency(new MemoryStore(), { ms: -1 })).toThrow(ValidationError);
  });
});

describe("withCounting", () => {
  it("counts requests and bytes by operation and resets", async () => {
    const store = withCounting(new MemoryStore());
    await store.put("a", bytes("hello"));
    await store.put("b", bytes("xy"));
    await store.get("a");
    await store.get("missing");
    await store.delete("b");
    for await (const _ of store.list("")) void _;
    expect(store.counts).toEqual({ gets: 2, puts: 2, deletes: 1, lists: 1, bytesIn: 7, bytesOut: 5 });
    store.reset();
    expect(store.counts).toEqual({ gets: 0, puts: 0, deletes: 0, lists: 0, bytesIn: 0, bytesOut: 0 });
  });
});

describe("ranged reads through the wrappers", () => {
  it("withCounting counts a ranged read as a get of the bytes returned; withLatency and withFaults pass it through or fail it", async () => {
    const inner = new MemoryStore();
    await inner.put("a", bytes("hello world"));
    const counted = withCounting(inner);
    expect(new TextDecoder().decode((await counted.getRange!("a", 6, 5))!)).toBe("world");
    expect(counted.counts).toMatchObject({ gets: 1, bytesOut: 5 });
    const slow = withLatency(inner, { ms: 0 });
    expect(new TextDecoder().decode((await slow.getRange!("a", 0, 5))!)).toBe("hello");
    const faulty = withFaults(inner, { failureRate: 1, seed: 1, ops: ["get"] });
    await expect(faulty.getRange!("a", 0, 5)).rejects.toMatchObject({ code: "INJECTED_FAULT", operation: "get" });
    expect(faulty.injected).toBe(1);
    // A store without ranged reads stays without them behind every wrapper.
    const plain = { get: inner.get.bind(inner), put: inner.put.bind(inner), delete: inner.delete.bind(inner), list: inner.list.bind(inner) };
    for (const w of [withCounting(plain), withLatency(plain, { ms: 0 }), withFaults(plain, { failureRate: 0 })]) expect(w.getRange).toBeUndefined();
  });
});

describe("ranged reads into a caller's buffer through the wrappers", () => {
  it("withCounting counts one as a get of the bytes read; withLatency passes it through; withFaults fails it having written part of the buffer", async () => {
    const inner = new MemoryStore();
    await inner.put("a", bytes("hello world"));
    const into = new Uint8Array(5);
    const counted = withCounting(inner);
    expect(await counted.getRangeInto!("a", 6, into)).toBe(5);
    expect(new TextDecoder().decode(into)).toBe("world");
    expect(counted.counts).toMatchObject({ gets: 1, bytesOut: 5 });
    expect(await withLatency(inner, { ms: 0 }).getRangeInto!("a", 0, into)).toBe(5);
    expect(new TextDecoder().decode(into)).toBe("hello");
    const faulty = withFaults(inner, { failureRate: 1, seed: 1, ops: ["get"] });
    await expect(faulty.getRangeInto!("a", 0, into)).rejects.toMatchObject({ code: "INJECTED_FAULT", operation: "get" });
    // What a failed read leaves in the buffer is not the object's bytes: callers must not use it.
    expect(new TextDecoder().decode(into)).not.toBe("hello");
    const plain = { get: inner.get.bind(inner), put: inner.put.bind(inner), delete: inner.delete.bind(inner), list: inner.list.bind(inner) };
    for (const w of [withCounting(plain), withLatency(plain, { ms: 0 }), withFaults(plain, { failureRate: 0 })]) expect(w.getRangeInto).toBeUndefined();
  });
});

describe("readRangeInto", () => {
  it("reads into the buffer when the store can, else answers the store's own bytes; refuses a short buffer and an answer past it", async () => {
    const inner = new MemoryStore();
    await inner.put("a", bytes("hello world"));
    const into = new Uint8Array(16);
    const got = (await readRangeInto(inner, "a", 6, 5, into))!;
    expect(got.buffer).toBe(into.buffer);
    expect(new TextDecoder().decode(got)).toBe("world");
    expect(await readRangeInto(inner, "absent", 0, 5, into)).toBeNull();
    // Without getRangeInto: getRange's own buffer, the caller's left alone.
    const ranged = {
      get: inner.get.bind(inner),
      getRange: inner.getRange.bind(inner),
      put: inner.put.bind(inner),
      delete: inner.delete.bind(inner),
      list: inner.list.bind(inner),
    };
    into.fill(0);
    const own = (await readRangeInto(ranged, "a", 0, 5, into))!;
    expect(own.buffer).not.toBe(into.buffer);
    expect(new TextDecoder().decode(own)).toBe("hello");
    expect(into.every((b) => b === 0)).toBe(true);
    await expect(readRangeInto(inner, "a", 0, 17, into)).rejects.toThrow(/at least 17 bytes/);
    const liar = { ...ranged, getRangeInto: async () => 6 };
    await expect(readRangeInto(liar, "a", 0, 5, into)).rejects.toThrow(/must resolve to the bytes it read/);
  });
});

describe("rangeOfBody", () => {
  const body = Uint8Array.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  it("takes the range from where Content-Range says the body starts, or from a whole body without one", () => {
    expect([...rangeOfBody("k", body.subarray(4, 7), "bytes 4-6/10", 4, 3)]).toEqual([4, 5, 6]);
    // A server that ignored the range: the whole object, no Content-Range.
    expect([...rangeOfBody("k", body, undefined, 4, 3)]).toEqual([4, 5, 6]);
    expect([...rangeOfBody("k", body, undefined, 8, 5)]).toEqual([8, 9]);
    // A server that announced a range but sent more of the object.
    expect([...rangeOfBody("k", body, "bytes 0-9/10", 0, 1)]).toEqual([0]);
    expect([...rangeOfBody("k", body.subarray(2), "bytes 2-9/*", 5, 2)]).toEqual([5, 6]);
    expect(() => rangeOfBody("k", body.subarray(6), "bytes 6-9/10", 4, 3)).toThrow(StoreRequestError);
  });
});
