/**
 * @module MemoryStore and lent bodies (store/put-body.ts): a lent body that
 * fills most of its buffer is kept as the object's bytes, without a copy;
 * anything else (not lent, a small view of a large buffer, a resizable
 * buffer, a refused put) is copied or not kept, and what a get answers is
 * the caller's.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, PreconditionFailedError } from "taquba";
import { lendBody } from "../../runtime/store/put-body.js";

const collect = async (store: MemoryStore) => {
  const out: [string, number][] = [];
  for await (const o of store.list("")) out.push([o.key, o.size]);
  return out;
};
const text = async (store: MemoryStore, key: string) => Buffer.from((await store.get(key))!.body).toString("latin1");

/** A lent body of `n` bytes of "a" on a buffer of its own. */
function lentBody(n: number): Buffer {
  const body = Buffer.allocUnsafeSlow(n).fill("a");
  lendBody(body);
  return body;
}

describe("MemoryStore and lent bodies", () => {
  it("keeps a lent body that fills its buffer as it is: a write the contract forbids shows through", async () => {
    const store = new MemoryStore();
    const body = lentBody(64 * 1024);
    await store.put("seg/1", body);
    body[0] = 0x7a;
    expect((await text(store, "seg/1")).slice(0, 2)).toBe("za");
    expect((await store.getRange("seg/1", 0, 1))![0]).toBe(0x7a);
  });

  it("keeps a lent body that fills three quarters of its buffer, copies one that fills less", async () => {
    const store = new MemoryStore();
    const whole = Buffer.allocUnsafeSlow(4096).fill("b");
    const most = whole.subarray(0, 3072);
    const less = Buffer.allocUnsafeSlow(4096).fill("c").subarray(0, 3071);
    lendBody(most);
    lendBody(less);
    await store.put("most", most);
    await store.put("less", less);
    most[0] = 0x7a;
    less[0] = 0x7a;
    expect((await text(store, "most"))[0]).toBe("z");
    expect(await text(store, "less")).toBe("c".repeat(3071));
  });

  it("copies a body not lent, a subarray of a lent one, a small lent one in Node's shared slab, and lent ones on a resizable or a shared buffer", async () => {
    const store = new MemoryStore();
    const mine = Buffer.allocUnsafeSlow(64 * 1024).fill("d");
    const sub = lentBody(64 * 1024).subarray(0);
    const small = Buffer.from("small body");
    lendBody(small);
    const resizable = new Uint8Array(new (ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer)(8, { maxByteLength: 16 }));
    resizable.fill(0x65);
    lendBody(resizable);
    await store.put("mine", mine);
    await store.put("sub", sub);
    await store.put("small", small);
    const shared = new Uint8Array(new SharedArrayBuffer(16)).fill(0x66);
    lendBody(shared);
    await store.put("resizable", resizable);
    await store.put("shared", shared);
    for (const b of [mine, sub, small, resizable, shared]) b[0] = 0x7a;
    expect(await text(store, "mine")).toBe("d".repeat(64 * 1024));
    expect(await text(store, "sub")).toBe("a".repeat(64 * 1024));
    expect(await text(store, "small")).toBe("small body");
    expect(await text(store, "resizable")).toBe("e".repeat(8));
    expect(await text(store, "shared")).toBe("f".repeat(16));
  });

  it("keeps nothing of a lent body whose create-if-absent put was refused", async () => {
    const store = new MemoryStore();
    await store.put("k", Buffer.from("first"));
    const body = lentBody(1024);
    await expect(store.put("k", body, { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    body[0] = 0x7a;
    expect(await text(store, "k")).toBe("first");
  });

  it("keeps an empty lent body and answers it empty", async () => {
    const store = new MemoryStore();
    const empty = new Uint8Array(0);
    lendBody(empty);
    await store.put("e", empty);
    expect((await store.get("e"))!.body.byteLength).toBe(0);
    expect([...(await collect(store))]).toEqual([["e", 0]]);
  });

  it("answers a get with a copy even of a kept lent body", async () => {
    const store = new MemoryStore();
    await store.put("k", lentBody(1024));
    const got = (await store.get("k"))!.body;
    got[0] = 0x7a;
    expect(await text(store, "k")).toBe("a".repeat(1024));
  });
});
