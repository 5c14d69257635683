/**
 * @module A LocalStore listing against a writer that never stops replacing
 * what the listing read, and against one doing so inside subdirectories.
 * The listing reads a directory again after losing objects to deletes; it
 * must still end (a bounded number of reads, however fast the writer), give
 * each key once and in order, and never give a key the writer had deleted
 * before the listing asked for it.
 */
import { describe, expect, it } from "vitest";
import { LocalStore } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const freshDir = useTempDirs("taquba-local-churn-");
const body = new Uint8Array([1]);
const pad = (n: number) => String(n).padStart(5, "0");

describe("a LocalStore listing under a writer that keeps replacing what it read", () => {
  it("ends after a bounded number of directory reads, each key given once and in order", async () => {
    const store = new LocalStore(await freshDir());
    const key = (n: number) => `m/${pad(n)}`;
    for (const n of [1, 2, 3]) await store.put(key(n), body);
    let next = 4;
    const given: string[] = [];
    for await (const o of store.list("m/")) {
      given.push(o.key);
      // Every listed-but-not-given key deleted, three newer written: the listing's next read only finds those.
      const top = next + 3;
      for (; next < top; next++) await store.put(key(next), body);
      for (let n = 1; n < top - 3; n++) if (!given.includes(key(n))) await store.delete(key(n));
      // A writer faster than any bound: without one the listing never ends.
      if (given.length > 200) throw new Error("the listing does not end");
    }
    expect(given.length, "one key per directory read, at most").toBeLessThanOrEqual(8);
    expect(given, "in order, each once").toEqual([...new Set(given)].sort());
    // Every key given existed when it was given: the first, then each newest of its round.
    expect(given[0]).toBe(key(1));
  });

  it("gives the keys written after the last one given inside a subdirectory, across directories in order", async () => {
    const store = new LocalStore(await freshDir());
    const key = (dir: string, n: number) => `q/${dir}/${pad(n)}`;
    for (const n of [1, 2, 3]) await store.put(key("a", n), body);
    for (const n of [1, 2]) await store.put(key("b", n), body);
    const given: string[] = [];
    for await (const o of store.list("q/")) {
      given.push(o.key);
      if (o.key === key("a", 1)) {
        // Inside "a": the rest of what the listing read goes, newer ones come; "b" is left alone.
        for (const n of [4, 5]) await store.put(key("a", n), body);
        for (const n of [2, 3]) await store.delete(key("a", n));
      }
    }
    expect(given).toEqual([key("a", 1), key("a", 4), key("a", 5), key("b", 1), key("b", 2)]);
  });

  it("gives an object renamed away and back before its turn, once", async () => {
    const store = new LocalStore(await freshDir());
    const key = (n: number) => `r/${pad(n)}`;
    for (const n of [1, 2, 3, 4]) await store.put(key(n), body);
    const given: string[] = [];
    for await (const o of store.list("r/")) {
      given.push(o.key);
      if (o.key === key(1)) {
        // Another process rewrites 2 (delete, write again) and drops 3: 2 is there at its turn, 3 is not.
        await store.delete(key(2));
        await store.put(key(2), body);
        await store.delete(key(3));
      }
    }
    expect(given).toEqual([key(1), key(2), key(4)]);
  });
});
