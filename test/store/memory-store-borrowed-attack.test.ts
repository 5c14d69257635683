/**
 * @module Bytes `MemoryStore.getBorrowed` lent stay as they were lent,
 * whatever the store is asked afterwards: a put over the same key (a
 * plain body, a lent one), a refused put-if-absent, a delete, a put of
 * another key; the next borrowed read answers the new object. And an
 * engine writing segments into the store checkpoint after checkpoint
 * (reusing its segment buffers where a store lets it) never writes into
 * bytes the store lent: each lent segment's checksum holds to the end.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, PreconditionFailedError, WriteBatch } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { lendBody } from "../../runtime/store/put-body.js";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** A lent body filling its own buffer, so the store keeps it as it is. */
function lent(s: string): Uint8Array {
  const body = new Uint8Array(new ArrayBuffer(s.length));
  body.set(enc(s));
  lendBody(body);
  return body;
}

describe("bytes MemoryStore lent", () => {
  it("stay as lent after puts over the key, a refused put-if-absent, a delete and other puts; the next borrowed read answers the new object", async () => {
    const store = new MemoryStore();
    await store.put("k", lent("first version of k"));
    const first = (await store.getBorrowed("k"))!.body;
    const before = Buffer.from(first).toString();
    await store.put("k", lent("second version of k"));
    const second = (await store.getBorrowed("k"))!.body;
    expect(Buffer.from(second).toString()).toBe("second version of k");
    await expect(store.put("k", lent("refused version"), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    await store.put("k", enc("third, plain"));
    await store.put("other", lent("another key's bytes"));
    await store.delete("k");
    expect(await store.getBorrowed("k")).toBeNull();
    await store.put("k", lent("fourth version of k"));
    expect(Buffer.from(first).toString()).toBe(before);
    expect(Buffer.from(second).toString()).toBe("second version of k");
    expect(Buffer.from((await store.getBorrowed("k"))!.body).toString()).toBe("fourth version of k");
  });

  it("are never written into by an engine that goes on checkpointing and compacting into the store", async () => {
    const rnd = testRandom("memory store lent to an engine");
    const store = new MemoryStore();
    // Segments of 1 MiB fill most of the engine's segment buffer, so the store keeps them as they are, not copies.
    const engine = await Engine.open(store, { checkpointWalObjects: 0, checkpointWalBytes: 0, maxSegmentBytes: 1024 * 1024, maxSegmentRuns: 2 });
    const borrowed: { key: string; body: Uint8Array; crc: number }[] = [];
    const seen = new Set<string>();
    for (let round = 0; round < 6; round++) {
      const b = new WriteBatch();
      for (let i = 0; i < 1500; i++) b.put(`k/${String(rnd.int(4000)).padStart(4, "0")}`, enc(`round ${round} `.repeat(60 + rnd.int(100))));
      await engine.commit(b);
      await engine.checkpoint();
      // Every segment stored so far, borrowed as soon as it is there.
      for await (const o of store.list("seg/")) {
        if (seen.has(o.key)) continue;
        seen.add(o.key);
        const got = await store.getBorrowed(o.key);
        if (got !== null) borrowed.push({ key: o.key, body: got.body, crc: crc32(got.body) });
      }
    }
    await engine.close();
    expect(borrowed.length).toBeGreaterThan(6);
    for (const { key, body, crc } of borrowed) expect(crc32(body), key).toBe(crc);
  });
});
