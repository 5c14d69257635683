/**
 * @module Borrowed reads (`ObjectStore.getBorrowed`): `MemoryStore` answers
 * the bytes it keeps, while a plain `get` or `getRange` still answers the
 * caller's own copy, so a caller mutating what it got changes nothing
 * stored; the wrappers pass a borrowed read through (and leave it out for a
 * store without one), and `readBorrowed` falls back to `get`.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, ValidationError, withCounting, withFaults, withLatency, type ObjectStore } from "taquba";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { readBorrowed } from "../../runtime/store/object-store.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("MemoryStore's borrowed reads", () => {
  it("answer the kept bytes, while get and getRange answer copies a caller may mutate without changing the store", async () => {
    const store = new MemoryStore();
    const { etag } = await store.put("seg/1", bytes("hello world"));
    const a = (await store.getBorrowed("seg/1"))!;
    const b = (await store.getBorrowed("seg/1"))!;
    expect(text(a.body)).toBe("hello world");
    expect(a.etag).toBe(etag);
    // The same bytes each time: no copy.
    expect(b.body.buffer).toBe(a.body.buffer);

    const got = (await store.get("seg/1"))!;
    expect(got.body.buffer).not.toBe(a.body.buffer);
    got.body.fill(0x21);
    const range = (await store.getRange("seg/1", 0, 5))!;
    range.fill(0x22);
    expect(text((await store.get("seg/1"))!.body)).toBe("hello world");
    expect(text(a.body)).toBe("hello world");
    expect(text((await store.getRange("seg/1", 6, 5))!)).toBe("world");

    // Replacing the answer's body replaces nothing stored.
    a.body = bytes("other");
    expect(text((await store.getBorrowed("seg/1"))!.body)).toBe("hello world");
  });

  it("answer null for an absent key and refuse a malformed one, as get does", async () => {
    const store = new MemoryStore();
    expect(await store.getBorrowed("absent")).toBeNull();
    await expect(store.getBorrowed("/bad")).rejects.toBeInstanceOf(ValidationError);
    await store.put("gone", bytes("x"));
    await store.delete("gone");
    expect(await store.getBorrowed("gone")).toBeNull();
  });

  it("pass through withCounting, withFaults, withLatency and a prefixed view; a store without them stays without", async () => {
    const inner = new MemoryStore();
    await inner.put("q/a", bytes("hello"));
    const kept = (await inner.getBorrowed("q/a"))!.body;
    const counted = withCounting(inner);
    expect((await counted.getBorrowed!("q/a"))!.body).toBe(kept);
    expect(counted.counts).toMatchObject({ gets: 1, bytesOut: 5 });
    expect((await withLatency(inner, { ms: 0 }).getBorrowed!("q/a"))!.body).toBe(kept);
    expect((await new PrefixedStore(inner, "q/").getBorrowed!("a"))!.body).toBe(kept);
    const faulty = withFaults(inner, { failureRate: 1, seed: 1, ops: ["get"] });
    await expect(faulty.getBorrowed!("q/a")).rejects.toMatchObject({ code: "INJECTED_FAULT", operation: "get" });

    const plain: ObjectStore = { get: inner.get.bind(inner), put: inner.put.bind(inner), delete: inner.delete.bind(inner), list: inner.list.bind(inner) };
    for (const w of [withCounting(plain), withLatency(plain, { ms: 0 }), withFaults(plain, { failureRate: 0 }), new PrefixedStore(plain, "q/")]) {
      expect(w.getBorrowed).toBeUndefined();
    }
    // readBorrowed: the kept bytes where the store lends them, else get's copy.
    expect((await readBorrowed(inner, "q/a"))!.body).toBe(kept);
    const copy = (await readBorrowed(plain, "q/a"))!.body;
    expect(copy).not.toBe(kept);
    expect(text(copy)).toBe("hello");
    expect(await readBorrowed(plain, "q/absent")).toBeNull();
  });
});
