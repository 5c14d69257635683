/**
 * @module LocalStore: the store conformance suite over a real directory, plus its
 * on-disk layout (escaping, temporary files, empty-directory removal).
 */
import { readdir, rm, rmdir, stat, unlink, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, LocalStore, StoreRequestError, ValidationError, WriteBatch } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { describeStoreConformance } from "./conformance.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { sharedPutThread } from "../../runtime/store/local-put-thread.js";

const freshDir = useTempDirs("taquba-local-");

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

async function keys(store: LocalStore, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

describeStoreConformance("LocalStore", { makeStore: async () => new LocalStore(await freshDir()), paginationKeys: 1100, readsInto: true });

describe("LocalStore on disk", () => {
  it("a ranged read asking for far more than the file holds returns what it holds, without allocating the asked length", async () => {
    const store = new LocalStore(await freshDir());
    await store.put("small", new Uint8Array([1, 2, 3, 4]));
    expect([...(await store.getRange("small", 1, 2 ** 40))!]).toEqual([2, 3, 4]);
    expect([...(await store.getRange("small", 9, 2 ** 40))!]).toEqual([]);
  });

  it("keeps objects across instances on the same directory", async () => {
    const dir = await freshDir();
    await new LocalStore(dir).put("wal/0001", enc("durable"));
    const again = new LocalStore(dir);
    expect(new TextDecoder().decode((await again.get("wal/0001"))!.body)).toBe("durable");
    expect(await keys(again)).toEqual(["wal/0001"]);
  });

  it("keeps keys that differ only in lone surrogates apart: refused, and a listing by such a prefix finds nothing", async () => {
    const store = new LocalStore(await freshDir());
    // Each would be written as the file of U+FFFD: the second put would replace the first.
    await expect(store.put("a\ud800", enc("one"))).rejects.toBeInstanceOf(ValidationError);
    await expect(store.put("a\udc00", enc("two"))).rejects.toBeInstanceOf(ValidationError);
    await store.put("a\ufffd/x", enc("v"));
    expect(await keys(store, "a\ud800/")).toEqual([]);
    expect(await keys(store, "a\ud800")).toEqual([]);
    expect(await keys(store, "a\ufffd/")).toEqual(["a\ufffd/x"]);
  });

  it("refuses to put once its directory was removed while in use, instead of making an empty store in its place", async () => {
    const dir = join(await freshDir(), "store");
    const store = new LocalStore(dir);
    await store.put("wal/1", enc("a"));
    await rm(dir, { recursive: true });
    for (const key of ["wal/2", "top", "new/dir/k"]) {
      const err = await store.put(key, enc("b")).catch((e: unknown) => e);
      expect(err, key).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toMatch(/the store's directory was removed while this store was in use/);
    }
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
    // Seen by a read only (an existing directory), the same.
    const other = join(await freshDir(), "other");
    await new LocalStore(other).put("k", enc("v"));
    const reader = new LocalStore(other);
    expect(await keys(reader)).toEqual(["k"]);
    await rm(other, { recursive: true });
    await expect(reader.put("k2", enc("v"))).rejects.toBeInstanceOf(StoreRequestError);
    // A store opened on the path afresh makes it, as on a first put.
    await new LocalStore(dir).put("k", enc("v"));
    expect(await keys(new LocalStore(dir))).toEqual(["k"]);
  });

  it("an engine on a directory removed under it stops acknowledging commits instead of storing them in an empty directory", async () => {
    const dir = join(await freshDir(), "store");
    const engine = await Engine.open(new LocalStore(dir), { retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    await engine.commit(new WriteBatch().put("k/1", enc("1")));
    await engine.checkpoint();
    await rm(dir, { recursive: true });
    const err = await engine.commit(new WriteBatch().put("k/2", enc("2"))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClosedError);
    expect(String((err as Error).cause)).toMatch(/the store's directory was removed/);
    await engine.close();
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("creates its directory on the first put and reads as empty before", async () => {
    const dir = join(await freshDir(), "not", "yet");
    const store = new LocalStore(dir);
    expect(await store.get("k")).toBeNull();
    expect(await keys(store)).toEqual([]);
    await store.delete("k");
    await store.put("k", enc("v"));
    expect((await stat(dir)).isDirectory()).toBe(true);
  });

  it("never lists temporary or stray files and never lets them collide with keys", async () => {
    const dir = await freshDir();
    const store = new LocalStore(dir);
    await store.put("a/b", enc("v"));
    // What a crash in the middle of a put leaves behind, plus files no key maps to.
    await writeFile(join(dir, "%tmp.1.1.abc"), "partial");
    await writeFile(join(dir, "a%2F", "%tmp.1.2.def"), "partial");
    await writeFile(join(dir, "stray%"), "x");
    await mkdir(join(dir, "plain-dir"));
    await writeFile(join(dir, "plain-dir", "f"), "x");
    expect(await keys(store)).toEqual(["a/b"]);
    // Keys spelled like the temporary files are ordinary keys.
    await store.put("%tmp.1.1.abc", enc("key"), { ifNoneMatch: "*" });
    expect(new TextDecoder().decode((await store.get("%tmp.1.1.abc"))!.body)).toBe("key");
    expect(await keys(store)).toEqual(["%tmp.1.1.abc", "a/b"]);
  });

  it("removes directories a delete left empty, but never the root", async () => {
    const dir = await freshDir();
    const store = new LocalStore(dir);
    await store.put("x/y/z", enc("1"));
    await store.put("x/keep", enc("2"));
    await store.delete("x/y/z");
    expect(await readdir(join(dir, "x%2F"))).toEqual(["keep"]);
    await store.delete("x/keep");
    expect(await readdir(dir)).toEqual([]);
    expect((await stat(dir)).isDirectory()).toBe(true);
  });

  it("survives puts racing deletes that empty the same directories", async () => {
    const store = new LocalStore(await freshDir());
    for (let round = 0; round < 20; round++) {
      await store.put(`d/e/k${round}`, enc("old"));
      await Promise.all([store.delete(`d/e/k${round}`), store.put(`d/e/n${round}`, enc("new"))]);
      expect(await store.get(`d/e/n${round}`)).not.toBeNull();
      await store.delete(`d/e/n${round}`);
    }
    expect(await keys(store)).toEqual([]);
  });

  it("deletes that together empty a directory all succeed, in one store and across two on the same directory", { timeout: HEAVY_TEST_MS }, async () => {
    const dir = await freshDir();
    const one = new LocalStore(dir);
    const other = new LocalStore(dir);
    for (const [label, second] of [
      ["one store", one],
      ["two stores", other],
    ] as const) {
      for (let round = 0; round < 60; round++) {
        const keysHere = [`${round}/d/k1`, `${round}/d/k2`, `${round}/d/k3`];
        for (const k of keysHere) await one.put(k, enc("v"));
        // Each delete's directory sync may find the directory already removed by another's.
        const results = await Promise.allSettled(keysHere.map((k, i) => (i % 2 === 0 ? one : second).delete(k)));
        expect(
          results.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason)),
          `${label}, round ${round}`,
        ).toEqual([]);
      }
      expect(await keys(one)).toEqual([]);
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it("a put whose object is deleted, and its emptied directories removed, before the put's directory sync never puts it back", {
    timeout: HEAVY_TEST_MS,
  }, async () => {
    const dir = await freshDir();
    const store = new LocalStore(dir);
    // Another process's delete, as soon as the object's file appears: unlink, then remove the emptied directories.
    const deleteWhenThere = async (round: number, settled: () => boolean): Promise<boolean> => {
      const folder = join(dir, `r${round}%2F`);
      while (!settled()) {
        try {
          await unlink(join(folder, "d%2F", "k"));
        } catch {
          continue;
        }
        await rmdir(join(folder, "d%2F")).catch(() => undefined);
        await rmdir(folder).catch(() => undefined);
        return true;
      }
      return false;
    };
    const failures: string[] = [];
    for (let round = 0; round < 400; round++) {
      let settled = false;
      const opts = round % 4 === 3 ? { ifNoneMatch: "*" as const } : {};
      const put = store.put(`r${round}/d/k`, enc("v"), opts).then(
        () => "resolved",
        (err: unknown) => String(err),
      );
      void put.finally(() => (settled = true));
      const deleted = await deleteWhenThere(round, () => settled);
      const outcome = await put;
      if (outcome !== "resolved") failures.push(`round ${round}: ${outcome}`);
      // Deleted after it landed: the put happened once, and the delete after it stands.
      if (deleted && (await store.get(`r${round}/d/k`)) !== null) failures.push(`round ${round}: the object is back after its delete`);
    }
    expect(failures).toEqual([]);
  });

  it("rejects a key segment too long for the file system with ValidationError", async () => {
    const store = new LocalStore(await freshDir());
    await expect(store.put(`a/${"x".repeat(300)}`, enc("v"))).rejects.toBeInstanceOf(ValidationError);
    expect(await keys(store)).toEqual([]);
  });

  it("says why a short segment makes a file name too long: escaping spells upper-case and non-ASCII bytes as three characters", async () => {
    const store = new LocalStore(await freshDir());
    // 100 and 90 bytes of key, 300 and 270 bytes of file name.
    for (const [segment, nameBytes] of [
      ["A".repeat(100), 300],
      ["\u4e2d".repeat(30), 270],
    ] as const) {
      for (const key of [segment, `d/${segment}`, `${segment}/x`]) {
        const err = await store.put(key, enc("v")).catch((e: unknown) => e);
        expect(err, key).toBeInstanceOf(ValidationError);
        const bytes = key.endsWith("/x") ? nameBytes + 3 : nameBytes;
        expect((err as Error).message).toContain(`needs a file name of ${bytes} bytes, longer than the 255 a local file system allows`);
        expect((err as Error).message).toMatch(/upper-case letters and non-ASCII characters included\) as three characters/);
      }
    }
    expect(await keys(store)).toEqual([]);
  });

  it("puts that succeed or lose a create-if-absent leave no temporary file and no open file behind", async () => {
    const dir = await freshDir();
    const store = new LocalStore(dir);
    // A create-if-absent starts the put thread (run alone, this test is its first user): the thread's own
    // descriptors are counted before, and its tidy-up after that put has closed the put's files.
    await store.put("d/warm", enc("v"), { ifNoneMatch: "*" });
    await sharedPutThread().tidied();
    const openFiles = async () => (process.platform === "linux" ? (await readdir("/proc/self/fd")).length : 0);
    const before = await openFiles();
    for (let i = 0; i < 20; i++) {
      await store.put(`d/k${i}`, enc("v"), { ifNoneMatch: "*" });
      await store.put(`d/k${i}`, enc("again"));
      await expect(store.put(`d/k${i}`, enc("lost"), { ifNoneMatch: "*" })).rejects.toThrow(/already exists/);
      await store.put(`d/e${i}`, new Uint8Array(0));
    }
    expect((await readdir(join(dir, "d%2F"))).filter((name) => name.startsWith("%tmp."))).toEqual([]);
    expect(new TextDecoder().decode((await store.get("d/k3"))!.body)).toBe("again");
    expect(await openFiles()).toBe(before);
  });

  it("a directory where an object's file belongs, or a file where a key's directory belongs, fails puts and reads with a non-retryable error saying what to remove, leaving no temporary file or descriptor", async () => {
    const dir = await freshDir();
    const store = new LocalStore(dir);
    await store.put("d/warm", enc("v"));
    await mkdir(join(dir, "d%2F", "squat"));
    await writeFile(join(dir, "f%2F"), "not a directory");
    const openFiles = async () => (process.platform === "linux" ? (await readdir("/proc/self/fd")).length : 0);
    const before = await openFiles();
    const refused = async (p: Promise<unknown>, what: RegExp) => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as StoreRequestError).retryable).toBe(false);
      expect((err as Error).message).toMatch(what);
    };
    await refused(store.put("d/squat", enc("v")), /directory stands where the object's file belongs/);
    await refused(store.get("d/squat"), /directory stands where the object's file belongs/);
    await refused(store.put("f/k", enc("v")), /file stands where the key's directory belongs/);
    await refused(store.put("f/deeper/k", enc("v")), /file stands where the key's directory belongs/);
    expect((await readdir(join(dir, "d%2F"))).filter((name) => name.startsWith("%tmp."))).toEqual([]);
    expect(await openFiles()).toBe(before);
    // Removed by hand, the same puts land.
    await rmdir(join(dir, "d%2F", "squat"));
    await unlink(join(dir, "f%2F"));
    await store.put("d/squat", enc("now"));
    await store.put("f/k", enc("now"));
    expect(await keys(store)).toEqual(["d/squat", "d/warm", "f/k"]);
  });

  it("changes the etag when an object is replaced", async () => {
    const store = new LocalStore(await freshDir());
    const first = await store.put("k", enc("same"));
    const second = await store.put("k", enc("same"));
    expect(second.etag).not.toBe(first.etag);
    expect((await store.get("k"))!.etag).toBe(second.etag);
  });
});
