/**
 * @module Change notification of a local directory store: each watched
 * prefix is followed alone (not its subfolders), a put reports the object's
 * name once its temporary file became the object, a folder the store
 * removed once empty and made again is followed again, and a wrapper that
 * declares it passes changes through is watched as the store underneath.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, type ObjectStore } from "taquba";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { localDirectory, watchPrefixes, watchThrough } from "../../runtime/client/store-watch.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { eventually, until } from "../support/until.js";

const tempDir = useTempDirs("taquba-store-watch-");
const body = new TextEncoder().encode("x");

/**
 * The names reported so far, and a wait for one of them, bounded by the time
 * this process was run (a watch event is read by this process: on busy cores
 * it waits to be scheduled, and a wall-clock bound counts that wait).
 */
function recorder() {
  const names: Array<string | undefined> = [];
  return {
    names,
    onChange: (name: string | undefined) => {
      names.push(name);
    },
    seen: (name: string) => until(`the watch to report ${name}`, () => names.includes(name)),
  };
}

describe("watchPrefixes on a local directory", () => {
  it("reports each object put or deleted under a prefix by its name, never a put's temporary file", async () => {
    const store = new LocalStore(await tempDir());
    const r = recorder();
    const stop = watchPrefixes(new PrefixedStore(store, "app/"), ["inbox/answers/"], r.onChange)!;
    try {
      expect(stop).toBeTypeOf("function");
      await store.put("app/inbox/answers/Order-1", body);
      await r.seen("Order-1");
      await store.put("app/inbox/answers/Order-2", body, { ifNoneMatch: "*" });
      await r.seen("Order-2");
      await store.put("app/inbox/answers/keep", body);
      await store.delete("app/inbox/answers/Order-1");
      await eventually(() => expect(r.names.filter((n) => n === "Order-1").length).toBeGreaterThan(1), 5_000);
      expect(r.names.filter((n) => n === undefined || !["Order-1", "Order-2", "keep"].includes(n))).toEqual([]);
    } finally {
      stop();
    }
  });

  it("does not follow subfolders: objects below a watched prefix's folders are not reported", async () => {
    const store = new LocalStore(await tempDir());
    await store.put("db/wal/deep/keep", body);
    const r = recorder();
    const stop = watchPrefixes(store, ["db/wal/"], r.onChange)!;
    try {
      await store.put("db/wal/deep/one", body);
      await store.put("db/wal/top", body);
      await r.seen("top");
      expect(r.names).not.toContain("one");
    } finally {
      stop();
    }
  });

  it("follows a folder again after the store removed it once empty and made it again", async () => {
    const store = new LocalStore(await tempDir());
    // A sibling keeps the parent folder in place, as the manifests keep an engine's.
    await store.put("db/manifest/00000000000000000001", body);
    const r = recorder();
    const stop = watchPrefixes(store, ["db/wal/"], r.onChange)!;
    try {
      await store.put("db/wal/00000000000000000001", body);
      await r.seen("00000000000000000001");
      await store.delete("db/wal/00000000000000000001");
      await expect
        .poll(() =>
          store
            .list("db/wal/")
            [Symbol.asyncIterator]()
            .next()
            .then((n) => n.done),
        )
        .toBe(true);
      await store.put("db/wal/00000000000000000002", body);
      // The folder is new: its first object may come before its watch; the next one is reported.
      await store.put("db/wal/00000000000000000003", body);
      await r.seen("00000000000000000003");
    } finally {
      stop();
    }
  });

  it("watches a wrapper that passes changes through as the store underneath, and nothing else", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const wrap = (inner: ObjectStore): ObjectStore => ({
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      put: (k, b, o) => inner.put(k, b, o),
      delete: (k) => inner.delete(k),
    });
    const plain = wrap(store);
    expect(localDirectory(plain, "a/")).toBeUndefined();
    expect(watchPrefixes(plain, ["a/"], () => {})).toBeUndefined();
    const through = wrap(store);
    watchThrough(through, store);
    expect(localDirectory(new PrefixedStore(through, "app/"), "a/")).toBe(store.directoryOf("app/a/"));
    const r = recorder();
    const stop = watchPrefixes(new PrefixedStore(through, "app/"), ["a/"], r.onChange)!;
    try {
      await through.put("app/a/one", body);
      await r.seen("one");
    } finally {
      stop();
    }
    expect(watchPrefixes(new MemoryStore(), ["a/"], () => {})).toBeUndefined();
  });
});
