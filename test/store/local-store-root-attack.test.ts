/**
 * @module Attacks on how LocalStore treats its own directory: a store
 * opened on a path that does not exist yet (nested, relative, behind a
 * symlink) makes it on its first put, also when many puts race; a root
 * removed after use is never made again; one removed and restored by hand
 * is used again. Real temporary directories, no mocks.
 */
import { join, relative } from "node:path";
import { mkdir, readdir, rm, symlink } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { LocalStore, StoreRequestError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const freshDir = useTempDirs("taquba-local-root-attack-");
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = async (store: LocalStore, key: string): Promise<string | undefined> => {
  const o = await store.get(key);
  return o === null ? undefined : new TextDecoder().decode(o.body);
};

describe("LocalStore root attacks", () => {
  it("a store on a nested path that does not exist makes it on the first of many concurrent puts, and every put lands", async () => {
    const root = join(await freshDir(), "a", "b", "c");
    const store = new LocalStore(root);
    const keys = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? `top-${i}` : `d${i % 5}/e${i % 2}/k-${i}`));
    await Promise.all(keys.map((k) => store.put(k, enc(k))));
    for (const k of keys) expect(await text(store, k)).toBe(k);
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed.sort()).toEqual([...keys].sort());
  });

  it("a read or a listing of a root that does not exist yet does not count as seeing it: the first put still makes it", async () => {
    const root = join(await freshDir(), "later");
    const store = new LocalStore(root);
    expect(await store.get("x/y")).toBeNull();
    for await (const _ of store.list("")) expect.unreachable();
    await store.put("x/y", enc("1"));
    expect(await text(store, "x/y")).toBe("1");
  });

  it("a relative path is the directory it names from where the process was when the store was made", async () => {
    const base = await freshDir();
    const root = relative(process.cwd(), join(base, "rel", "store"));
    const store = new LocalStore(root);
    await store.put("k/1", enc("v"));
    expect(await readdir(join(base, "rel", "store"))).not.toHaveLength(0);
    expect(await text(new LocalStore(join(base, "rel", "store")), "k/1")).toBe("v");
  });

  it("a root behind a symlink is used through it; once its target is removed, a put fails and makes nothing", async () => {
    const base = await freshDir();
    const target = join(base, "target");
    await mkdir(target);
    const link = join(base, "link");
    await symlink(target, link);
    const store = new LocalStore(link);
    await store.put("a/b", enc("1"));
    await store.put("c", enc("2"));
    expect(await text(new LocalStore(target), "a/b")).toBe("1");
    await rm(target, { recursive: true });
    await expect(store.put("a/b", enc("3"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(store.put("new/dir/k", enc("3"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(store.put("top", enc("3"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(readdir(target)).rejects.toThrow(/ENOENT/);
  });

  it("a root removed after use fails concurrent puts into known and new directories, and makes nothing; restored by hand, it is used again", async () => {
    const root = join(await freshDir(), "store");
    const store = new LocalStore(root);
    await store.put("known/k", enc("1"));
    await store.put("top", enc("1"));
    await rm(root, { recursive: true });
    const results = await Promise.allSettled(["known/k", "known/k2", "fresh/x/y", "top", "top2"].map((k) => store.put(k, enc("2"))));
    for (const r of results) {
      expect(r.status).toBe("rejected");
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreRequestError);
    }
    await expect(readdir(root)).rejects.toThrow(/ENOENT/);
    // Restored (here: made again, empty) by hand: the store's owner decided, so puts go on.
    await mkdir(root);
    await store.put("known/k", enc("3"));
    await store.put("fresh/x/y", enc("3"));
    expect(await text(store, "known/k")).toBe("3");
    expect(await text(store, "fresh/x/y")).toBe("3");
  });

  it("deleting every object leaves the root in place, so the next put works", async () => {
    const root = join(await freshDir(), "store");
    const store = new LocalStore(root);
    await store.put("a/b/c", enc("1"));
    await store.put("top", enc("1"));
    await store.delete("a/b/c");
    await store.delete("top");
    expect(await readdir(root)).toEqual([]);
    await store.put("a/b/c", enc("2"));
    expect(await text(store, "a/b/c")).toBe("2");
  });
});
