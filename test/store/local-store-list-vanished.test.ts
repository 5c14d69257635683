/**
 * @module A LocalStore listing while another writer deletes the objects it
 * read from the directory and writes newer ones: the engine keeps its newest
 * manifests and deletes one only after three newer ones were published, so
 * a listing of manifests that came back without the newest (or empty) made
 * an opener copy a deleted manifest, or the empty store's, and fail to open
 * beside a writer checkpointing without pause. A listing that lost objects
 * to deletes reads the directory again for the keys after the last it gave.
 */
import { describe, expect, it } from "vitest";
import { LocalStore } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const freshDir = useTempDirs("taquba-local-list-");
const body = new Uint8Array([1]);
const key = (n: number) => `manifest/${String(n).padStart(4, "0")}`;

/** Lists `prefix`, running `between` once the first object was given (the directory was read by then). */
async function listAround(store: LocalStore, prefix: string, between: () => Promise<void>): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) {
    keys.push(o.key);
    if (keys.length === 1) await between();
  }
  return keys;
}

describe("a LocalStore listing while objects are deleted and newer ones written", () => {
  it("gives the keys written after the last one it gave when the ones it read vanished", async () => {
    const store = new LocalStore(await freshDir());
    for (const n of [1, 2, 3]) await store.put(key(n), body);
    const keys = await listAround(store, "manifest/", async () => {
      // A writer moves on by three and deletes what is more than two behind its newest.
      for (const n of [4, 5, 6]) await store.put(key(n), body);
      for (const n of [1, 2, 3]) await store.delete(key(n));
    });
    expect(keys, "the newest at the listing's end is in it").toEqual([key(1), key(4), key(5), key(6)]);
  });

  it("goes on reading while the objects it read keep vanishing", async () => {
    const store = new LocalStore(await freshDir());
    for (const n of [1, 2, 3]) await store.put(key(n), body);
    let next = 4;
    let rounds = 0;
    const keys: string[] = [];
    for await (const o of store.list("manifest/")) {
      keys.push(o.key);
      // Three rounds: every key the listing read but has not given yet is deleted, three newer ones written.
      if (rounds < 3) {
        rounds++;
        const top = next + 3;
        for (; next < top; next++) await store.put(key(next), body);
        for (let n = 1; n < top - 3; n++) await store.delete(key(n));
      }
    }
    expect(keys).toEqual([key(1), key(4), key(7), key(10), key(11), key(12)]);
  });

  it("gives nothing twice and keeps its order when nothing vanished", async () => {
    const store = new LocalStore(await freshDir());
    for (const n of [1, 2, 3]) await store.put(key(n), body);
    const keys = await listAround(store, "manifest/", async () => {
      await store.put(key(4), body);
    });
    // Written during the listing, not lost to a delete: left to the next listing, as before.
    expect(keys).toEqual([key(1), key(2), key(3)]);
    expect(await listAround(store, "", async () => {})).toEqual([key(1), key(2), key(3), key(4)]);
  });
});
