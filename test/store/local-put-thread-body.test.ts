/**
 * @module The body a put hands the put thread (store/local-put-thread.ts)
 * is copied straight into the buffer the thread writes from: whatever view
 * the caller passes (a window into a larger buffer at an odd offset, a
 * Buffer from Node's shared pool, the largest body the thread takes, an
 * empty one), the file holds exactly its bytes, and a short body after a
 * long one keeps none of the long one's tail.
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore } from "taquba";
import { PUT_THREAD_MAX_BODY, PutThread } from "../../runtime/store/local-put-thread.js";
import { lendBody } from "../../runtime/store/put-body.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-put-thread-body-");

/** `length` bytes that differ from their neighbours and from a shifted copy of themselves. */
function pattern(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return out;
}

describe("the body a put hands the put thread", () => {
  it("is written exactly, for every kind of view, long then short", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    try {
      const big = pattern(PUT_THREAD_MAX_BODY + 100, 1);
      const bodies: [string, Uint8Array][] = [
        ["the largest the thread takes", big.subarray(0, PUT_THREAD_MAX_BODY)],
        ["a window at an odd offset", big.subarray(13, 13 + 29_000)],
        ["a Buffer from the shared pool", Buffer.from("a small object from the pool")],
        ["empty", new Uint8Array(0)],
        ["one byte at the buffer's end", big.subarray(big.length - 1)],
        ["a window of a window", big.subarray(1_000, 9_000).subarray(3, 4_003)],
      ];
      for (const [i, [what, body]] of bodies.entries()) {
        const target = join(dir, `o${i}`);
        const stat0 = await thread.put(join(dir, `%tmp.${process.pid}.${i}`), target, dir, body, true);
        const written = await readFile(target);
        expect(written.length, what).toBe(body.length);
        expect(Buffer.compare(written, body), what).toBe(0);
        expect(stat0.size, what).toBe(BigInt(body.length));
        expect((await stat(target)).size, what).toBe(body.length);
      }
    } finally {
      await thread.close();
    }
  });

  it("through LocalStore, lent or not: each object reads back as its body, however the views overlap", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const shared = pattern(64 * 1024, 2);
    const lent = shared.subarray(7, 7 + 20_000);
    lendBody(lent);
    const puts: [string, Uint8Array][] = [
      ["wal/a", lent],
      ["wal/b", shared.subarray(5, 50_005)],
      ["wal/c", shared.subarray(60_000, 60_010)],
      ["wal/d", new Uint8Array(0)],
    ];
    for (const [key, body] of puts) await store.put(key, body, { ifNoneMatch: "*" });
    for (const [key, body] of puts) {
      const got = await store.get(key);
      expect(got?.body.length, key).toBe(body.length);
      expect(Buffer.compare(got!.body, body), key).toBe(0);
    }
  });
});
